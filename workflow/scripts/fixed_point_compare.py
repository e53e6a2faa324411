"""Rule fixed_point_compare (stage fixed_point, Thm 2-3, Thm 5): every run's per-prompt plateau
beside p*(beta, p_ref) and the baselines, the summary per (run, beta) and summary.md
(grpo_repro.fixed_point.compare, grpo_repro.fixed_point.markdown)."""

import pandas as pd

from grpo_repro import io
from grpo_repro.fixed_point import compare, markdown, runs

sm = snakemake
io.log_to(sm.log[0])
p = sm.params
ref = pd.read_csv(sm.input.ref, dtype={"prompt_id": str})
parts = []
for run in p.runs:
    kind, beta, _ = runs.parse(run)
    tables = [
        pd.read_csv(sm.input[f"{run}@{s}"], dtype={"prompt_id": str}).assign(step=s)
        for s in p.steps
    ]
    kl = pd.read_csv(sm.input[f"kl@{run}"], dtype={"prompt_id": str})
    table = compare.prompt_table(ref, pd.concat(tables), kl, kind, beta, p.eps)
    parts.append(table.assign(run=kind, beta=beta))
prompts = pd.concat(parts, ignore_index=True)
summary = compare.summary_table(prompts, p.n_bootstrap, p.seed)
io.write_csv(sm.output.prompts, prompts)
io.write_csv(sm.output.summary, summary)
io.write_text(sm.output.md, markdown.markdown(summary, prompts))
print(summary.to_string())
