"""Plot: per-prompt trajectories along checkpoints (the paper's Fig 3), one panel per variant."""

import sys

from grpo_repro.final import plots, tables

sm = snakemake  # noqa: F821 (injected by Snakemake)
sys.stderr = sys.stdout = open(sm.log[0], "w")
traj = tables.read_long(sm.input.csv)
plots.trajectories(traj, sm.wildcards.split, sm.params.variants, sm.output.png, sm.output.pdf)
