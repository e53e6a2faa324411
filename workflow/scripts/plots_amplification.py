"""Plot: p_ref vs final p per prompt (diagonal, shares above/on/below) and histograms of both."""

import sys

import pandas as pd

from grpo_repro.final import plots, tables

sm = snakemake  # noqa: F821 (injected by Snakemake)
sys.stderr = sys.stdout = open(sm.log[0], "w")
prompts = tables.read_long(sm.input.prompts)
split, variants = sm.wildcards.split, sm.params.variants
plots.amplification_scatter(prompts, pd.read_csv(sm.input.shares), split, variants,
                            sm.output.scatter_png, sm.output.scatter_pdf)
plots.amplification_hist(prompts, split, variants, sm.output.hist_png, sm.output.hist_pdf)
