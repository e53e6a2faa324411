"""Plot: mean success vs training step for every variant, 95% bootstrap band, one panel per split."""

import sys

import pandas as pd

from grpo_repro.final import plots

sm = snakemake  # noqa: F821 (injected by Snakemake)
sys.stderr = sys.stdout = open(sm.log[0], "w")
plots.amplification_mean(pd.read_csv(sm.input.mean), sm.params.splits, sm.params.variants,
                         sm.output.png, sm.output.pdf)
