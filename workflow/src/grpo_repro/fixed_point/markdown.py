"""results/fixed_point/summary.md: the fixed-point test (Thm 2-3; Thm 5 for mirror) in numbers,
written from summary_table (grpo_repro.fixed_point.compare); also the section of the run's summary."""

from __future__ import annotations

import math

import pandas as pd


def _f(x, fmt="{:.3f}") -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else fmt.format(x)


def _ci(row, name) -> str:
    return f"{_f(row[f'gap_{name}'])} [{_f(row[f'gap_{name}_lo'])}, {_f(row[f'gap_{name}_hi'])}]"


def verdict(row) -> str:
    """One sentence per (run, beta), from the numbers only."""
    best = min(row["gap_stays"], row["gap_to_one"])
    which = "stays at p_ref" if row["gap_stays"] <= row["gap_to_one"] else "goes to 1"
    closer = row["gap_prediction"] < best
    return (
        f"{row['run']}, beta {row['beta']:g}: the prediction is "
        f"{'closer than' if closer else 'not closer than'} the better baseline ({which}): "
        f"mean absolute gap {_f(row['gap_prediction'])} vs {_f(best)} "
        f"(ratio {_f(row['gap_ratio_to_best_baseline'], '{:.2f}')}); "
        f"{_f(100 * row['share_plateau'], '{:.0f}')}% of prompts at a plateau."
    )


def table(summary: pd.DataFrame) -> list[str]:
    lines = [
        "| run | beta | prompts | at plateau | mean abs gap: prediction | stays at p_ref | "
        "goes to 1 | Spearman with the plateau: p* / p_ref | covered: p* / p_ref / 1 | beta_eff (median) | "
        "KL measured / Gibbs at p* / Gibbs at plateau |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in summary.iterrows():
        lines.append(
            f"| {r['run']} | {r['beta']:g} | {int(r['n_prompts'])} | "
            f"{_f(100 * r['share_plateau'], '{:.0f}')}% | {_ci(r, 'prediction')} | "
            f"{_ci(r, 'stays')} | {_ci(r, 'to_one')} | {_f(r['spearman_prediction'], '{:.2f}')}, "
            f"{_f(r['spearman_p_ref'], '{:.2f}')} | {_f(100 * r['covered_prediction'], '{:.0f}')}% / "
            f"{_f(100 * r['covered_stays'], '{:.0f}')}% / {_f(100 * r['covered_to_one'], '{:.0f}')}% | "
            f"{_f(r['beta_eff_median'], '{:.2f}')} | {_f(r['kl_mean'])} / {_f(r['kl_gibbs_mean'])} / "
            f"{_f(r['kl_gibbs_measured_mean'])} |"
        )
    return lines


def markdown(summary: pd.DataFrame, prompts: pd.DataFrame) -> str:
    plateau = prompts["plateau_steps"].iloc[0] if len(prompts) else "n/a"
    lines = [
        "# Fixed-point test: measured plateau vs p*(beta, p_ref) (Thm 2-3; Thm 5 for mirror)",
        "",
        "GRPO trains on a fixed pool of training prompts for many epochs. For each prompt the "
        f"plateau is its success rate over the last two checkpoints (steps {plateau}); the "
        "prediction is the stable fixed point p* of p = h(p) reached from the prompt's measured "
        "p_ref (grpo), or 1 (mirror, Thm 5). Baselines: the plateau stays at p_ref, or goes to 1. "
        "Gaps are mean absolute differences over the prompts with 0 < p_ref < 1, with 95% "
        "bootstrap intervals over prompts; `covered` is the share of prompts whose plateau "
        "interval meets the prediction's interval (p* propagated from p_ref's). beta_eff is the "
        "beta whose fixed point the plateau is; the KL columns compare the trained policy's "
        "sequence-level KL(pi || pi_ref) with the Gibbs policy's at p* and at the plateau.",
        "",
        *table(summary),
        "",
        *[f"- {verdict(r)}" for _, r in summary.iterrows()],
        "",
    ]
    return "\n".join(lines)
