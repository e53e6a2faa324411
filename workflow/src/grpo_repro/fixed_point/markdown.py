"""The fixed-point test in words and tables (Thm 2-3 at the population and at finite group size G;
Sec. 5's linear law for dr_grpo; the study's aims), written from aggregate.summary_table only:
`study_markdown` (results/fixed_point/<study>/summary.md) and `overview` (results/fixed_point/
summary.md, every study). The cells' number formats: grpo_repro.cells.

The sections that belong to one study: the groups study's order of the plateaus by G against
p*_G's (Thm 2-3 at finite group size), the factors study's one-setting-at-a-time changes and long
runs, and the tabular control (compare.control) beside the language model's base run.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from grpo_repro import variants as reg
from grpo_repro.cells import ci, num, pct
from grpo_repro.fixed_point.aggregate import AIM_ABS, AIM_RATIO, linear_law
from grpo_repro.fixed_point.runs import LONG

LAW_SLOPE_TOL = 0.1  # the dr_grpo slope within 0.1 of 1
LAW_INTERCEPT_TOL = 0.15  # and the intercept within 15% of (1 - 1/G)/beta

TITLES = {
    "main": "Main study: grpo and dr_grpo at every beta and seed, two_kl at the sweep's beta",
    "groups": "Group-size sweep: the plateau against p*_G as G grows",
    "factors": "Factors: plain k3, mirror, and one training setting changed at a time",
    "compact": "Compact study (the default graph): one run kind at one beta, a few checkpoints",
}


def table(summary: pd.DataFrame) -> list[str]:
    lines = [
        "| run | beta | G | seeds x prompts | converged | gap to p* | gap to p*_G (per seed) | "
        "noise floor | stays at p_ref | goes to 1 | p*_G gap / better baseline | "
        "plateau - p*_G | Spearman p*_G / p_ref | beta_eff: h / h_G | KL: measured / Gibbs |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in summary.iterrows():
        lines.append(
            f"| {r['run']} | {r['beta']:g} | {int(r['G'])} | {int(r['n_seeds'])} x "
            f"{int(r['n_prompts'])} | {pct(r['share_converged'], '{:.0f}')} | {ci(r, 'gap_pred')} | "
            f"{ci(r, 'gap_pred_G')} ({r['gap_pred_G_seeds']}) | {num(r['floor_G'])} | "
            f"{ci(r, 'gap_stays')} | {ci(r, 'gap_to_one')} | {num(r['ratio_G'], '{:.2f}')} | "
            f"{ci(r, 'signed_pred_G', '{:+.3f}')} | {num(r['spearman_pred_G'], '{:.2f}')} / "
            f"{num(r['spearman_p_ref'], '{:.2f}')} | {num(r['beta_eff_median'], '{:.2f}')} / "
            f"{num(r['beta_eff_G_median'], '{:.2f}')} | {num(r['kl_mean'])} / "
            f"{num(r['kl_gibbs_mean'])} |"
        )
    return lines


def verdict(r) -> str:
    """The study's aim for one (run, beta), decided by the intervals (aggregate.aim_verdict), with
    the numbers that decide it."""
    if reg.plateau_base(r["variant"]) is None:  # the previous-policy anchor
        return (
            f"{r['run']}, beta {r['beta']:g}: no interior fixed point (Thm 5); gap to 1 "
            f"{num(r['gap_to_one'])}, {pct(r['share_converged'], '{:.0f}')} of prompts converged."
        )
    side = "below" if r["signed_pred_G"] < 0 else "above"
    return (
        f"{r['run']}, beta {r['beta']:g}, G {int(r['G'])}: aim {r['aim']} (p*_G's mean gap "
        f"{ci(r, 'gap_pred_G')} against {AIM_ABS}; {num(r['ratio_G'], '{:.2f}')} "
        f"[{num(r['ratio_G_lo'], '{:.2f}')}, {num(r['ratio_G_hi'], '{:.2f}')}] of the better "
        f"baseline against {AIM_RATIO:.2f}); the plateau sits {side} p*_G by "
        f"{num(abs(r['signed_pred_G']))} on average, noise floor {num(r['floor_G'])}, p*'s gap "
        f"{num(r['gap_pred'])}."
    )


def law_lines(summary: pd.DataFrame) -> list[str]:
    """dr_grpo's linear law, logit p*_G = logit p_ref + (1 - 1/G)/beta, against the fit."""
    rows = summary[summary["variant"].map(linear_law)]
    if rows.empty:
        return []
    out = [
        "",
        f"### {', '.join(rows['variant'].unique())}: the linear law logit plateau = slope x logit p_ref + intercept",
        "",
        "| run | beta | G | slope | intercept | (1 - 1/G)/beta | 1/beta (population) | "
        "shift at slope 1 | slope within 0.1 of 1 | intercept within 15% (off by) | "
        "(1 - 1/G)/beta in the intercept's interval |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in rows.iterrows():
        ok_s = abs(r["law_slope"] - 1) <= LAW_SLOPE_TOL
        off = r["law_intercept"] / r["law_intercept_G"] - 1
        ok_i = abs(off) <= LAW_INTERCEPT_TOL
        inside = r["law_intercept_lo"] <= r["law_intercept_G"] <= r["law_intercept_hi"]
        out.append(
            f"| {r['run']} | {r['beta']:g} | {int(r['G'])} | {ci(r, 'law_slope')} | "
            f"{ci(r, 'law_intercept')} | {num(r['law_intercept_G'])} | "
            f"{num(r['law_intercept_population'])} | {ci(r, 'law_shift')} | "
            f"{'yes' if ok_s else 'no'} | {'yes' if ok_i else 'no'} ({off:+.1%}) | "
            f"{'yes' if inside else 'no'} |"
        )
    out += [
        "",
        "Fit over seeds x prompts with 0 < p_ref < 1 (plateau logit with a 1/2 continuity "
        "correction); intervals: crossed bootstrap. The shift at slope 1 is the mean of "
        "logit plateau - logit p_ref. p_ref's own sampling noise attenuates the slope "
        "(errors in the regressor).",
    ]
    return out


def trajectory_lines(summary: pd.DataFrame) -> list[str]:
    """Each run's mean success at every checkpoint (pooled over seeds): monotone or not; for the
    two-KL runs (Thm 9) the paper predicts an interior fixed point and no monotone improvement."""
    if "monotone" not in summary:
        return []
    out = [
        "",
        "### Trajectories: is the improvement monotone?",
        "",
        "| run | beta | beta of the predicting map | mean success per checkpoint (step 0 = p_ref) | "
        "largest drop | monotone (no drop beyond 2 s.e.) |",
        "|---|---|---|---|---|---|",
    ]
    for _, r in summary.iterrows():
        out.append(
            f"| {r['run']} | {r['beta']:g} | {num(r['beta_pred'], '{:g}')} | {r['trajectory']} | "
            f"{num(r['drop_max'])} | {'yes' if r['monotone'] else 'no'} |"
        )
    for _, r in summary[summary["variant"].map(lambda v: reg.get(v).two_kl)].iterrows():
        out += [
            "",
            f"{r['run']}, beta {r['beta']:g} (Thm 9: h_G's fixed point at alpha beta = "
            f"{num(r['beta_pred'], '{:g}')}, Delta_R = 0): an interior plateau, mean "
            f"{num(r['p_plateau_mean'])} against p*_G's {num(r['p_pred_G_mean'])} (gap "
            f"{ci(r, 'gap_pred_G')}, p_ref's baseline {num(r['gap_stays'])}); its trajectory "
            + ("rises monotonically" if r["monotone"] else "is NOT monotone")
            + f" (largest drop {num(r['drop_max'])}).",
        ]
    return out


def study_markdown(
    study: str, summary: pd.DataFrame, prompts: pd.DataFrame, tabular: pd.DataFrame | None = None
) -> str:
    plateau = ", ".join(prompts["plateau_steps"].unique()) if len(prompts) else "n/a"
    lines = [
        f"## {TITLES.get(study, study)}",
        "",
        "Per prompt, the plateau is the success rate over the last two checkpoints (steps "
        f"{plateau}); p* is the stable fixed point of h reached from the measured p_ref, p*_G "
        "that of h_G at the run's group size G (each group whitened by its own mean and "
        "spread); dr_grpo: logit p_ref + 1/beta and + (1 - 1/G)/beta; two_kl: those of h and h_G "
        "at alpha beta (Thm 9 with Delta_R = 0); mirror: 1 (Thm 5). Gaps: "
        "mean absolute differences over the prompts with 0 < p_ref < 1, averaged over seeds, "
        "95% crossed bootstrap intervals over seeds x prompts. `converged`: the last three "
        "checkpoints' Wilson intervals overlap pairwise. The noise floor is the mean gap an "
        "exact p*_G would show, given p_ref's and the plateau's sample sizes.",
        "",
        *table(summary),
        "",
        *[f"- {verdict(r)}" for _, r in summary.iterrows()],
        *law_lines(summary),
        *trajectory_lines(summary),
        *(group_lines(summary) if study == "groups" else []),
        *(factor_lines(summary) if study == "factors" else []),
        *(tabular_lines(tabular, summary) if tabular is not None else []),
        "",
    ]
    return "\n".join(lines)


def overview(studies: dict[str, str]) -> str:
    """results/fixed_point/summary.md: every study's page under one title."""
    return "\n".join(
        [
            "# Fixed-point test: measured plateau vs p* and p*_G (Thm 2-3 at finite group size)",
            "",
            f"Aim, fixed before the runs: p*_G's mean absolute gap <= {AIM_ABS} and under "
            f"{AIM_RATIO:.2f} of the better baseline at every beta over the seeds, each decided by "
            "its 95% interval (met, missed, or not resolved at this precision); "
            f"dr_grpo's slope within {LAW_SLOPE_TOL} of 1 and intercept within "
            f"{LAW_INTERCEPT_TOL:.0%} of (1 - 1/G)/beta; plateaus ordered by G as p*_G orders them.",
            "",
            *studies.values(),
        ]
    )


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
    """The tabular control (fixed_point.compare) beside the language model's base run of the same
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
