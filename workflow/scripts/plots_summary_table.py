"""Render results/summary.json's tables as one HTML page for the Snakemake report."""

import sys

import json

from grpo_repro.final import plots, tables

sm = snakemake  # noqa: F821 (injected by Snakemake)
sys.stderr = sys.stdout = open(sm.log[0], "w")
tables.write_text(plots.summary_html(json.load(open(sm.input.json))), sm.output.html)
