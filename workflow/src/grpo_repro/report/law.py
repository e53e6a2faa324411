"""The fixed-point law in the summary and on the landing page (Thm 2-3 at finite group size G: each
training prompt's plateau at p*_G of h_G, above p_ref): the compact study of the default graph
(fixed_point.compact), from its summary row (grpo_repro.fixed_point.aggregate.summary_table) and
its resampling (grpo_repro.fixed_point.aggregate) only.

`section` is results/summary.json's `fixed_point` (None without the compact study); `markdown` its
summary.md section; `landing` its lines on the report's landing page, beside the amplification
headline: the gap to p*_G against the gap of "stays at p_ref" and of "goes to 1", each with its
interval, and whether the resampling resolves the difference.
"""

from __future__ import annotations

import pandas as pd

from grpo_repro.cells import ci
from grpo_repro.fixed_point.aggregate import AIM_ABS

KEYS = (  # the summary row's columns the summary keeps (aggregate.summary_table's names)
    "run", "variant", "beta", "G", "n_seeds", "n_prompts", "plateau_steps", "share_converged",
    "gap_pred", "gap_pred_lo", "gap_pred_hi", "gap_pred_G", "gap_pred_G_lo", "gap_pred_G_hi",
    "gap_stays", "gap_stays_lo", "gap_stays_hi", "gap_to_one", "gap_to_one_lo", "gap_to_one_hi",
    "signed_pred_G", "signed_pred_G_lo", "signed_pred_G_hi", "floor_G", "ratio_G", "ratio_G_lo",
    "ratio_G_hi", "aim_gap_G", "aim", "p_plateau_mean", "p_pred_mean", "p_pred_G_mean", "trajectory",
)  # fmt: skip


def _value(x):
    if isinstance(x, bool) or x is None or isinstance(x, str):
        return x
    try:
        return (
            None if pd.isna(x) else (int(x) if float(x).is_integer() and abs(x) > 1 else float(x))
        )
    except (TypeError, ValueError):
        return x


def section(summary: pd.DataFrame | None, resolution: pd.DataFrame | None, fp: dict) -> dict | None:
    """results/summary.json's `fixed_point`: the compact study's first (run, beta) row, its
    settings, the better baseline and the resampling at its own counts and at every other."""
    if summary is None or summary.empty:
        return None
    r = summary.iloc[0]
    out = {k: _value(r[k]) for k in KEYS if k in r}
    out.update({k: int(r[k]) for k in ("G", "n_seeds", "n_prompts")})  # counts (CSV floats)
    stays = r["gap_stays"] <= r["gap_to_one"]
    out["better_baseline"] = "stays at p_ref" if stays else "goes to 1"
    out["better_baseline_key"] = "gap_stays" if stays else "gap_to_one"
    c = fp["compact"]
    out["settings"] = {
        "steps": c["max_steps"],
        "save_steps": c["save_steps"],
        "samples": c["samples"],
        "ref_samples": fp["ref_samples"],
        "prompts_per_step": fp["prompts_per_step"],
    }
    res = resolution if resolution is not None else pd.DataFrame()
    rows = res[(res["run"] == r["run"]) & (res["beta"] == r["beta"])] if len(res) else res
    out["resolution"] = [{k: _value(v) for k, v in x.items()} for x in rows.to_dict("records")]
    own = [x for x in out["resolution"] if x["own"]]
    out["resolved"] = bool(own[0]["resolved"]) if own else None
    return out


def headline(s: dict) -> str:
    """One sentence: the plateau against p*_G and against the better baseline."""
    own = next((x for x in s["resolution"] if x["own"]), None)
    res = (
        f"; the better baseline's gap exceeds it by {own['diff']:+.3f} [{own['diff_lo']:+.3f}, "
        f"{own['diff_hi']:+.3f}] (resampled at these counts)"
        if own
        else ""
    )
    return (
        f"{s['run']} at beta {s['beta']:g}, G {s['G']}, {s['n_prompts']} training prompts "
        f"x {s['n_seeds']} seed(s), {s['settings']['steps']} steps: mean gap of the plateau to "
        f"p*_G {ci(s, 'gap_pred_G')} (to p* {ci(s, 'gap_pred')}), against "
        f'"stays at p_ref" {ci(s, "gap_stays")} and "goes to 1" {ci(s, "gap_to_one")}'
        f"{res}."
    )


def verdict(s: dict) -> str:
    """Whether the law is resolved, and the study's aim, fixed before the run (the gap to p*_G
    within AIM_ABS and under AIM_RATIO of the better baseline's), decided by the intervals the
    line quotes (aggregate.aim_verdict): met, missed, or not resolved at this precision."""
    word = "resolved against" if s["resolved"] else "NOT resolved against"
    return (
        f"p*_G is {word} the better baseline ({s['better_baseline']}). Aim (fixed before the "
        f"run): the gap {ci(s, 'gap_pred_G')} within {AIM_ABS}, and {s['ratio_G']:.2f} "
        f"[{s['ratio_G_lo']:.2f}, {s['ratio_G_hi']:.2f}] of the better baseline's under 1/3 "
        f"(noise floor {s['floor_G']:.3f}): {s['aim']}."
    )


def markdown(s: dict | None) -> list[str]:
    """summary.md's section: the headline, the verdict and the resampling table."""
    if not s:
        return []
    lines = [
        "## Fixed-point law on training prompts (study compact, Thm 2-3 at finite G)",
        "",
        headline(s),
        "",
        verdict(s)
        + f" Mean plateau {s['p_plateau_mean']:.3f} against p*_G {s['p_pred_G_mean']:.3f} and p* "
        f"{s['p_pred_mean']:.3f}; noise floor {s['floor_G']:.3f}; mean success per checkpoint "
        f"(step 0 = p_ref) {s.get('trajectory', 'n/a')}.",
        "",
        "Resampled (prompts with replacement, binomial samples, p*_G recomputed from each "
        "resampled p_ref): the better baseline's gap minus p*_G's.",
        "",
        "| samples per checkpoint | prompts | gap to p*_G | better baseline | difference [95%] | "
        "share > 0 | share < 1/3 | own |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for x in s["resolution"]:
        lines.append(
            f"| {x['samples']} | {x['prompts']} | {x['gap_pred_G']:.3f} | {x['gap_better']:.3f} | "
            f"{x['diff']:+.3f} [{x['diff_lo']:+.3f}, {x['diff_hi']:+.3f}] | "
            f"{x['share_resolved']:.3f} | {x['share_ratio']:.3f} | {'yes' if x['own'] else ''} |"
        )
    return [*lines, ""]


def landing(s: dict | None) -> list[str]:
    """The landing page's lines (reStructuredText)."""
    if not s:
        return []
    return [
        f"**Fixed-point law (Thm 2-3 at finite G), on training prompts.** {headline(s)} "
        f"{verdict(s)}",
        "",
    ]
