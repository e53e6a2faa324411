"""The fixed-point test in words and tables (Thm 2-3 at the population and at finite group size G;
Sec. 5's linear law for dr_grpo; the study's aims), written from aggregate.summary_table only:
`study_markdown` (results/fixed_point/<study>/summary.md) and `overview` (results/fixed_point/
summary.md, every study). The sections of the groups and factors studies and of the tabular
control are fixed_point.markdown_studies; the cells' number formats grpo_repro.cells."""

from __future__ import annotations

import pandas as pd

from grpo_repro import variants as reg
from grpo_repro.cells import ci, num, pct
from grpo_repro.fixed_point.aggregate import AIM_ABS, AIM_RATIO, linear_law
from grpo_repro.fixed_point.markdown_studies import factor_lines, group_lines, tabular_lines

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
