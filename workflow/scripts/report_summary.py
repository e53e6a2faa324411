"""Rule report_summary (stage report): results/summary.json and summary.md: mean success with
intervals, final - p_ref, the paper's 21% -> 37.5% beside ours, derivation pass counts, theory
overlay, the fixed-point law of the compact study, resolved configuration (grpo_repro.report.summary,
grpo_repro.report.law, grpo_repro.report.markdown)."""

import pandas as pd

from grpo_repro import io, provenance
from grpo_repro.report import law, markdown, summary


def read(path: str | None) -> pd.DataFrame | None:
    """An optional input's table (None when the rule has no such input)."""
    return pd.read_csv(path) if path else None


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    variants, inp = sm.params.variants, sm.input
    s = summary.build(
        mean=pd.read_csv(inp.mean),
        paired=pd.read_csv(inp.paired),
        shares=pd.read_csv(inp.shares),
        overlay=pd.read_csv(inp.overlay),
        derivations=io.read_json(inp.derivations),
        run_configs={v: io.read_json(p)["config"] for v, p in zip(variants, inp.runs)},
        train_logs=dict(zip(sm.params.runs, inp.train_logs)),
        config=sm.params.config,
        bench=summary.benchmarks(sm.params.benchmarks, summary.UPSTREAM_STAGES),
        splits=io.read_json(inp.splits),
        best=read(inp.get("best")),
        curve=read(inp.get("curve")),
        fixed_point=law.section(
            read(inp.get("fp_summary")), read(inp.get("fp_resolution")), sm.params.fixed_point
        ),
        zero=io.read_json(inp.zero) if inp.get("zero") else None,
    )
    s["provenance"] = {
        k: v for k, v in provenance.record({}, inputs=list(inp)).items() if k != "config"
    }
    io.write_json(sm.output.json, s)
    io.write_text(sm.output.md, markdown.markdown(s))
    print(markdown.markdown(s))


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
