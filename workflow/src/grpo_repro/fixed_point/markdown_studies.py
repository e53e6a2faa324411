"""The sections of the fixed-point pages that belong to one study (fixed_point.markdown assembles
them): the groups study's order of the plateaus by G against p*_G's (Thm 2-3 at finite group size),
the factors study's one-setting-at-a-time changes and long runs, and the tabular control
(fixed_point.tabular) beside the language model's base run."""

from __future__ import annotations

import numpy as np
import pandas as pd

from grpo_repro import variants as reg
from grpo_repro.cells import ci, num
from grpo_repro.fixed_point.runs import LONG


def group_lines(summary: pd.DataFrame) -> list[str]:
    """The plateau ordered by G as p*_G orders it (one beta, grpo)."""
    grpo = reg.find("reference", mean_only=False).name
    rows = summary[summary["variant"] == grpo].sort_values("G")
    if rows["G"].nunique() < 2:
        return []
    ordered_pred = rows["p_pred_G_mean"].is_monotonic_increasing
    ordered = rows["p_plateau_mean"].is_monotonic_increasing
    sizes = " < ".join(str(int(g)) for g in rows["G"])
    return [
        "",
        f"### Order by G (G = {sizes})",
        "",
        "Mean plateau: "
        + ", ".join(f"G {int(r['G'])}: {num(r['p_plateau_mean'])}" for _, r in rows.iterrows())
        + "; mean p*_G: "
        + ", ".join(f"{num(r['p_pred_G_mean'])}" for _, r in rows.iterrows())
        + f"; mean p*: {num(rows['p_pred_mean'].iloc[0])}. p*_G "
        + ("rises" if ordered_pred else "does not rise")
        + " with G, and the plateaus "
        + ("are ordered the same way." if ordered == ordered_pred else "are NOT ordered so."),
    ]


def factor_lines(summary: pd.DataFrame) -> list[str]:
    """Each changed setting against the base run of its kind at the same beta: does it move the
    plateau toward p*_G? A `long` run (the convergence check): how much doubling the steps moves
    the mean plateau, beside the gap reported."""
    rows = summary[~summary["setting"].isin(["base"]) & ~summary["setting"].str.match(r"G\d+")]
    out = []
    for _, r in rows.iterrows():
        kind = r["run"].removesuffix(f"_{r['setting']}")
        b = summary[(summary["run"] == kind) & (summary["beta"] == r["beta"])]
        if b.empty:
            continue
        b = b.iloc[0]
        toward = abs(b["signed_pred_G"]) - abs(r["signed_pred_G"])
        half = (r["signed_pred_G_hi"] - r["signed_pred_G_lo"]) / 2
        if toward > half:
            said = f"moves the plateau toward p*_G by {num(toward)}"
        elif toward < -half:
            said = f"moves the plateau away from p*_G by {num(-toward)}"
        else:
            said = f"no measurable change ({num(abs(toward))} within its interval's +-{num(half)})"
        if r["setting"] == LONG:
            moved = r["p_plateau_mean"] - b["p_plateau_mean"]
            said += (
                f"; the mean plateau moves by {num(moved, '{:+.3f}')} from steps "
                f"{b['plateau_steps']} to {r['plateau_steps']}, "
                + ("less" if abs(moved) < b["gap_pred_G"] else "NOT less")
                + f" than the gap reported ({num(b['gap_pred_G'])})"
            )
        out.append(
            f"- {kind} {r['setting']} (beta {r['beta']:g}): plateau - p*_G "
            f"{ci(r, 'signed_pred_G', '{:+.3f}')} vs {num(b['signed_pred_G'], '{:+.3f}')} at base "
            f"(gap {num(r['gap_pred_G'])} vs {num(b['gap_pred_G'])}): {said}."
        )
    return ["", "### One factor at a time", "", *out] if out else []


def tabular_lines(tabular: pd.DataFrame, summary: pd.DataFrame) -> list[str]:
    """The tabular control (fixed_point.tabular) beside the language model's base run of the same
    variant and beta: the gap the update leaves by itself, and what the model adds."""
    out = []
    for (variant, beta), t in tabular.groupby(["variant", "beta"], sort=False):
        signed = float((t["p_tabular"] - t["p_pred_G"]).mean())
        gap = float((t["p_tabular"] - t["p_pred_G"]).abs().mean())
        sd = float(np.sqrt((t["logit_sd"] ** 2).mean()))
        b = summary[(summary["run"] == f"{variant}_k3_ratio") & (summary["beta"] == beta)]
        lm = "no base run to compare with"
        if not b.empty:
            b = b.iloc[0]
            lm = (
                f"the language model's {num(b['signed_pred_G'], '{:+.3f}')} "
                f"[{num(b['signed_pred_G_lo'], '{:+.3f}')}, {num(b['signed_pred_G_hi'], '{:+.3f}')}]"
                f" (logit sd {num(b['logit_sd'], '{:.2f}')} over its last three checkpoints): "
                + (
                    "the update and its sampling noise do not explain the model's gap; "
                    f"{num(b['signed_pred_G'] - signed, '{:+.3f}')} is what a parametric policy "
                    "over token sequences, shared across prompts, adds"
                    if b["signed_pred_G_hi"] < signed or b["signed_pred_G_lo"] > signed
                    else "the model's gap is within what the update leaves by itself"
                )
            )
        out.append(
            f"- {variant}, beta {beta:g}, G {int(t['G'].iloc[0])}: a free per-prompt policy "
            f"trained by the same sampled update ({len(t)} prompts at their measured p_ref, Adam "
            f"lr {t['lr'].iloc[0]:g}, {int(t['n_iter'].iloc[0])} batches) ends at plateau - p*_G "
            f"{num(signed, '{:+.3f}')} (mean |gap| {num(gap)}, logit sd {num(sd, '{:.2f}')}), vs "
            f"{lm}."
        )
    return ["", "### Tabular control: the same update on a free per-prompt policy", "", *out]
