"""Stand-alone HTML pages for the Snakemake report: the summary tables (results/summary.json) and
the theory stage's claim table (results/theory/derivations.json)."""

from __future__ import annotations

import html
import math

import pandas as pd

from grpo_repro import io


def _table(df: pd.DataFrame) -> str:
    def fmt(x):
        return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.4g}"

    return df.to_html(index=False, float_format=fmt, na_rep="n/a", border=0, classes="summary")


def summary_html(s: dict) -> str:
    """Stand-alone HTML page of results/summary.json's main tables."""
    mean = pd.DataFrame(s["mean_success"])
    paired = pd.DataFrame(s["paired_difference"])
    over = pd.DataFrame(s["theory_overlay"])
    pc, d = s["paper_comparison"], s["derivations"]
    paper = pd.DataFrame(
        [
            {
                "": "paper (GSM8K test)",
                "pi_ref": pc["paper"]["ref_mean_success"],
                "final (grpo)": pc["paper"]["final_mean_success"],
            },
            {
                "": f"this run ({pc['ours']['split']}, step {pc['ours']['final_step']})",
                "pi_ref": pc["ours"]["ref_mean_success"],
                "final (grpo)": pc["ours"]["final_mean_success"],
            },
        ]
    )
    over_cols = [
        "variant",
        "split",
        "frac_amplified_measured",
        "frac_amplified_predicted",
        "n_ref_zero",
        "n_ref_zero_stayed_zero",
        "spearman_limit",
        "spearman_iter",
        "spearman_p_ref",
        "mean_abs_gap_limit",
        "nominal_iterations_final",
    ]
    t = s["config"]["train"]
    cfg = (
        f"beta = {t['beta']}, smoothing eps = {t['smoothing_eps']}, advantage = {t['advantage']}, "
        f"mu = {t['num_iterations']}, G = {t['num_generations']}, lr = {t['learning_rate']}, "
        f"model = {s['config']['model']['name_or_path'] or 'organism'}, data = {s['config']['data']['source']}"
    )
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Summary</title><style>"
        "body{font:14px sans-serif;margin:1em}table.summary{border-collapse:collapse;font:13px sans-serif}"
        "table.summary td,table.summary th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}"
        "</style></head><body>",
        f"<p>Configuration: {html.escape(cfg)}.</p>",
        "<h2>Reference and final mean success beside the paper (Sec. 6)</h2>",
        _table(paper),
        f"<p>{html.escape(pc['statement'])}</p>",
        "<h2>Mean success per checkpoint (95% bootstrap interval over prompts)</h2>",
        _table(
            mean[["variant", "split", "step", "n_prompts", "mean", "low", "high", "mean_lenient"]]
        ),
        "<h2>Final - p_ref, paired over prompts (95% paired bootstrap interval)</h2>",
        _table(
            paired[
                [
                    "variant",
                    "split",
                    "final_step",
                    "n_prompts",
                    "mean_ref",
                    "mean_final",
                    "mean_diff",
                    "low",
                    "high",
                ]
            ]
        ),
        "<h2>Theory overlay</h2>",
        f"<p>{html.escape(s['iteration_note'])}</p>",
        _table(over[[c for c in over_cols if c in over.columns]]),
        "<h2>Derivation checks (stage 1)</h2>",
        f"<p>Claims passed {d['claims_passed']} / {d['claims_total']}; paper errata confirmed "
        f"{d['errata_passed']} / {d['errata_total']}.</p>",
        "</body></html>",
    ]
    return "\n".join(parts)


def draw_summary_table(inputs: dict, outputs: list, split=None, variants=(), splits=()) -> None:
    """Entry point of the plot rule report_plot_summary_table."""
    io.write_text(outputs[0], summary_html(io.read_json(inputs["json"])))


def theory_html(records: list[dict]) -> str:
    """The claim checks as one HTML table: id, claim, reference, kind, method, result, detail."""
    df = pd.DataFrame(records)
    df["result"] = [
        ("PASS" if ok else "FAIL")
        + (" (literal reading shown wrong)" if k == "erratum" and ok else "")
        for ok, k in zip(df["passed"], df["kind"])
    ]
    cols = ["id", "claim", "reference", "kind", "method", "result", "detail"]
    counts = df.groupby("method").size().to_dict()
    head = (
        f"<p>{int(df['passed'].sum())} / {len(df)} checks pass; by method: "
        + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        + ".</p>"
    )
    table = df[cols].to_html(index=False, border=0, classes="summary", escape=True)
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Claim checks</title><style>"
        "body{font:14px sans-serif;margin:1em}table.summary{border-collapse:collapse;font:12px sans-serif}"
        "table.summary td,table.summary th{padding:2px 6px;border-bottom:1px solid #ddd;text-align:left;"
        "vertical-align:top}</style></head><body><h2>Theory stage: claim checks (Sec. 2-5)</h2>"
        + head
        + table
        + "</body></html>"
    )


def draw_theory_table(inputs: dict, outputs: list, split=None, variants=(), splits=()) -> None:
    """Entry point of the plot rule report_plot_theory_table."""
    io.write_text(outputs[0], theory_html(io.read_json(inputs["derivations"])))
