"""Stage 5b: per-prompt trajectories of a seeded random choice of prompts (the paper's Fig 3)."""

import sys

from grpo_repro.final import tables

sm = snakemake  # noqa: F821 (injected by Snakemake)
sys.stderr = sys.stdout = open(sm.log[0], "w")
long = tables.read_long(sm.input.long)
traj = tables.trajectories(long, sm.params.n_prompts, sm.params.seed)
tables.write_csv(traj, sm.output.csv)
print(traj.groupby("split")["prompt_id"].unique())
