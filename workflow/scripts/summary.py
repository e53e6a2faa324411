"""Stage 5e: results/summary.json and summary.md: mean success with intervals, final - p_ref, the
paper's 21% -> 37.5% beside ours, derivation pass counts, theory overlay, resolved configuration."""

import json
import sys

import pandas as pd

from grpo_repro import provenance
from grpo_repro.final import summary, tables

sm = snakemake  # noqa: F821 (injected by Snakemake)
sys.stderr = sys.stdout = open(sm.log[0], "w")
variants = sm.params.variants
s = summary.build(
    mean=pd.read_csv(sm.input.mean), paired=pd.read_csv(sm.input.paired), shares=pd.read_csv(sm.input.shares),
    overlay=pd.read_csv(sm.input.overlay), derivations=json.load(open(sm.input.derivations)),
    run_configs={v: json.load(open(p))["config"] for v, p in zip(variants, sm.input.runs)},
    train_logs=dict(zip(variants, sm.input.train_logs)), config=sm.params.config,
    bench=summary.benchmarks(sm.params.benchmarks))
s["provenance"] = {k: v for k, v in provenance.record({}, inputs=list(sm.input)).items() if k != "config"}
provenance.write_json(sm.output.json, s)
tables.write_text(summary.markdown(s), sm.output.md)
print(summary.markdown(s))
