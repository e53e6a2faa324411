"""Plot: measured trajectories beside each variant's predicted recurrence; final p vs p_ref with the
predicted iterate and limit curves."""

import sys

import pandas as pd

from grpo_repro.final import plots, tables

sm = snakemake  # noqa: F821 (injected by Snakemake)
sys.stderr = sys.stdout = open(sm.log[0], "w")
plots.overlay(tables.read_long(sm.input.trajectories), pd.read_csv(sm.input.curves), sm.wildcards.split,
              sm.params.variants, sm.output.png, sm.output.pdf)
