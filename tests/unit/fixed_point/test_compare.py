"""The fixed-point test's comparison (grpo_repro.fixed_point.compare, .aggregate, .markdown) on
fabricated evaluation tables with known answers: predictions p* (Thm 2) and p*_G (finite group),
1 for mirror (Thm 5), the dr_grpo law; the plateau and convergence criteria; gaps over seeds; the
noise floor; the aim's verdict both ways; the law fit recovering a known line."""

import re

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logit

from grpo_repro.dynamics import prediction as pred
from grpo_repro.fixed_point import aggregate, compare, markdown
from grpo_repro.fixed_point.runs import Run
from tests.helpers.report_fixtures import counts_table

EPS, BETA, G = 1e-5, 2.0, 8
IDS = ["a", "b", "c", "d", "e"]
P_REF = [0.1, 0.3, 0.5, 0.7, 0.0]


def _tables(plateau, n=200, steps=(80, 160, 240)):
    ref = counts_table(IDS, [round(400 * p) for p in P_REF], 400)
    k = [round(n * t) for t in plateau]
    ckpt = pd.concat([counts_table(IDS, k, n).assign(step=s) for s in steps])
    kl = pd.DataFrame({"prompt_id": IDS, "kl": 0.1, "kl_se": 0.01})
    return ref, ckpt, kl


def _target(variant="grpo", group_size=G):
    return [
        float(pred.limit_from(p, BETA, EPS, group_size=group_size, variant=variant)[1])
        if p > 0
        else 0.0
        for p in P_REF
    ]


def _run(variant="grpo", setting="", seed=0, g=G, alpha=None) -> Run:
    """A k3_ratio run at BETA (a row of grpo_repro.fixed_point.runs.table)."""
    return Run(variant, "k3_ratio", setting, BETA, seed, g, alpha)


def _table(variant, plateau, seeds=(0,), alpha=None):
    parts = []
    for s in seeds:
        run = _run(variant, seed=s, alpha=alpha)
        parts.append(compare.prompt_table(*_tables(plateau), run, EPS, G))
    return pd.concat(parts, ignore_index=True)


def test_predictions_plateau_and_gaps_at_p_star_g():
    target = _target()
    t = _table("grpo", target, seeds=(0, 1, 2))
    assert t["kind"].tolist()[:4] == ["fixed_point"] * 4 and t["kind"].iloc[4] == "absorbing"
    one = t[t["seed"] == 0]
    assert one["p_pred_G"].iloc[:4].to_numpy() == pytest.approx(target[:4])
    assert one["p_pred"].iloc[:4].to_numpy() == pytest.approx(
        [pred.limit_from(p, BETA, EPS)[1] for p in P_REF[:4]]
    )
    assert (one["p_pred_G"].iloc[:4] < one["p_pred"].iloc[:4]).all()  # finite G: below p*
    assert (t["p_pred_G_lo"] <= t["p_pred_G"] + 1e-12).all()
    assert (t["p_pred_G"] <= t["p_pred_G_hi"] + 1e-12).all()
    assert t["plateau"].all() and t["converged"].all() and t["covered_G"].iloc[:4].all()
    assert t["plateau_steps"].iloc[0] == "160-240"
    s = aggregate.summary_table(t, EPS, n_boot=200).iloc[0]
    assert s["n_seeds"] == 3 and s["n_prompts"] == 4  # p_ref = 0 excluded (absorbing)
    p = one["p_plateau"].iloc[:4].to_numpy()
    assert s["gap_stays"] == pytest.approx(np.mean(np.abs(p - P_REF[:4])))
    assert s["gap_to_one"] == pytest.approx(np.mean(1 - p))
    assert s["gap_pred_G"] < 0.005 < s["gap_pred"]
    assert s["gap_pred_G_seeds"].count("/") == 2
    assert 0.005 < s["floor_G"] < 0.05 and s["aim"] == aggregate.MET
    assert "aim met" in markdown.verdict(s) and f"{s['gap_pred_G_hi']:.3f}]" in markdown.verdict(s)


def test_a_plateau_far_from_p_star_g_misses_the_aim():
    t = _table("grpo", [0.2, 0.4, 0.6, 0.75, 0.0])
    s = aggregate.summary_table(t, EPS, n_boot=100).iloc[0]
    assert s["aim"] == aggregate.MISSED and s["signed_pred_G"] < 0
    line = markdown.verdict(s)
    assert "aim missed" in line and "below p*_G" in line and "against 0.03" in line


@pytest.mark.parametrize(
    "gap, ratio, verdict",
    [  # (gap interval, ratio interval) against the fixed 0.03 and 1/3
        ((0.020, 0.028), (0.10, 0.25), "met"),
        ((0.021, 0.039), (0.10, 0.25), "not resolved at this precision"),  # the gap straddles
        ((0.020, 0.028), (0.25, 0.40), "not resolved at this precision"),  # the ratio straddles
        ((0.031, 0.040), (0.10, 0.25), "missed"),  # the gap's interval above 0.03
        ((0.020, 0.028), (0.34, 0.50), "missed"),  # the ratio's above 1/3
        ((0.021, 0.039), (0.34, 0.50), "missed"),  # one half missed decides
    ],
)
def test_the_aim_is_decided_by_its_intervals(gap, ratio, verdict):
    assert aggregate.aim_verdict(*gap, *ratio) == verdict


def test_noise_floor_shrinks_with_the_sample_sizes():
    t = _table("grpo", _target())
    g = t[(t["p_ref"] > 0) & (t["p_ref"] < 1)]
    small = aggregate.noise_floor(g, EPS)
    big = aggregate.noise_floor(
        g.assign(ref_samples=g["ref_samples"] * 100, plateau_samples=g["plateau_samples"] * 100),
        EPS,
    )
    assert big == pytest.approx(small / 10, rel=0.35)


def test_convergence_needs_the_last_three_checkpoints_to_agree():
    ref, ckpt, kl = _tables(_target())
    moving = counts_table(IDS, [5, 20, 40, 60, 0], 200).assign(step=80)
    ckpt = pd.concat([ckpt[ckpt["step"] != 80], moving])
    t = compare.prompt_table(ref, ckpt, kl, _run(), EPS, G)
    assert t["plateau"].all() and not t["converged"].iloc[:4].any()


def test_mirror_is_predicted_to_go_to_one():
    t = _table("mirror", [0.9] * 4 + [0.0])
    assert (
        t["p_pred"].tolist() == [1.0] * 4 + [0.0] and t["p_pred_G"].tolist() == t["p_pred"].tolist()
    )


def test_dr_grpo_law_fit_recovers_the_finite_g_line():
    target = _target("dr_grpo")
    want = expit(logit(np.array(P_REF[:4])) + (1 - 1 / G) / BETA)
    assert target[:4] == pytest.approx(want, abs=1e-12)
    t = _table("dr_grpo", target, seeds=(0, 1))
    s = aggregate.summary_table(t, EPS, n_boot=100).iloc[0]
    assert s["law_intercept_G"] == pytest.approx((1 - 1 / G) / BETA)
    assert s["law_slope"] == pytest.approx(1.0, abs=0.05)
    assert s["law_shift"] == pytest.approx(s["law_intercept_G"], abs=0.05)
    wide = s.copy()
    wide["law_intercept_lo"], wide["law_intercept_hi"] = 0.3, 0.5  # contains (1 - 1/8)/2
    lines = "\n".join(markdown.law_lines(pd.DataFrame([wide])))
    assert "| dr_grpo_k3_ratio | 2 | 8 |" in lines
    assert re.search(r"yes \| yes \([+-]\d\.\d%\) \| yes \|", lines)
    wide["law_intercept_lo"], wide["law_intercept_hi"] = 0.0, 0.1
    wide["law_intercept"] = 0.8 * wide["law_intercept_G"]
    low = "\n".join(markdown.law_lines(pd.DataFrame([wide])))
    assert "| no (-20.0%) | no |" in low


def test_group_order_and_factor_lines():
    rows = []
    for run, target in (
        (_run(), _target(group_size=8)),
        (_run(setting="G16", g=16), _target(group_size=16)),
    ):
        rows.append(compare.prompt_table(*_tables(target), run, EPS, run.group_size))
    summary = aggregate.summary_table(pd.concat(rows, ignore_index=True), EPS, n_boot=50)
    text = "\n".join(markdown.group_lines(summary))
    assert "G = 8 < 16" in text and "rises" in text and "ordered the same way" in text
    flat = summary.assign(p_plateau_mean=summary["p_plateau_mean"].to_numpy()[::-1])
    assert "NOT ordered" in "\n".join(markdown.group_lines(flat))


def _summary(rows) -> pd.DataFrame:
    """Summary rows (run, setting, signed gap to p*_G) at beta 2 with +-0.015 intervals."""
    return pd.DataFrame(
        [
            {
                "run": run,
                "setting": s,
                "beta": 2.0,
                "signed_pred_G": v,
                "signed_pred_G_lo": v - 0.015,
                "signed_pred_G_hi": v + 0.015,
            }
            for run, s, v in rows
        ]
    )


@pytest.mark.parametrize(
    "signed, verdict",
    [
        (-0.005, "moves the plateau toward p*_G by 0.025"),
        (-0.033, "no measurable change"),
        (-0.06, "moves the plateau away from p*_G by 0.030"),
    ],
)
def test_factor_lines_compare_with_the_base_run(signed, verdict):
    summary = _summary(
        [
            ("grpo_k3_ratio", "base", -0.03),
            ("grpo_k3", "base", -0.001),  # another kind at the same beta: not a factor's base
            ("grpo_k3_ratio_lr_half", "lr_half", signed),
        ]
    )
    summary["gap_pred_G"] = summary["signed_pred_G"].abs()
    text = "\n".join(markdown.factor_lines(summary))
    assert "vs -0.030 at base" in text and verdict in text


@pytest.mark.parametrize(
    "moved, said",
    [
        (0.01, "+0.010 from steps 400-480 to 880-960, less"),
        (-0.05, "-0.050 from steps 400-480 to 880-960, NOT less"),
    ],
)
def test_long_run_is_compared_with_the_base_run_of_its_own_kind(moved, said):
    summary = _summary(
        [
            ("grpo_k3_ratio", "base", -0.03),
            ("dr_grpo_k3_ratio", "base", -0.02),
            ("dr_grpo_k3_ratio_long", "long", -0.02 + moved),
        ]
    ).assign(
        gap_pred_G=0.04,
        p_plateau_mean=[0.60, 0.50, 0.50 + moved],
        plateau_steps=["400-480", "400-480", "880-960"],
    )
    text = "\n".join(markdown.factor_lines(summary))
    assert "dr_grpo_k3_ratio long (beta 2)" in text and "vs -0.020 at base" in text
    assert f"the mean plateau moves by {said} than the gap reported (0.040)" in text


def test_overview_puts_every_study_under_the_aims():
    pages = {s: f"## {markdown.TITLES[s]}\n" for s in ("main", "groups", "factors")}
    text = markdown.overview(pages)
    assert (
        text.startswith("# Fixed-point test")
        and "fixed before the runs" in text
        and "<= 0.03" in text
    )
    assert text.index(markdown.TITLES["main"]) < text.index(markdown.TITLES["factors"])


def test_two_kl_predicts_h_at_alpha_beta():
    """Thm 9 with Delta_R = 0: the two-KL fixed points are h's (h_G's) at alpha beta."""
    alpha = 0.5
    at = [
        float(pred.limit_from(p, alpha * BETA, EPS, group_size=G)[1]) if p > 0 else 0.0
        for p in P_REF
    ]
    t = _table("two_kl", at, alpha=alpha)
    assert t["p_pred_G"].iloc[:4].to_numpy() == pytest.approx(at[:4])
    assert (t["beta_pred"] == alpha * BETA).all()
    grpo = _table("grpo", at)
    assert (t["p_pred_G"].iloc[:4] > grpo["p_pred_G"].iloc[:4]).all()  # weaker pull to pi_ref
    with pytest.raises(ValueError, match="alpha"):
        _table("two_kl", at)  # a two-KL run without its alpha
    summary = aggregate.summary_table(t, EPS, n_boot=50)
    assert summary["gap_pred_G"].iloc[0] < 0.01 and summary["beta_pred"].iloc[0] == 1.0


def _trajectory(means, n=400, seeds=(0, 1)):
    """trajectory_table rows of a run whose 4 inner prompts sit at `means` per checkpoint."""
    ref = counts_table(IDS, [round(400 * p) for p in P_REF], 400)
    steps = range(80, 80 * len(means) + 1, 80)
    ckpt = pd.concat(
        counts_table(IDS, [round(n * m)] * 4 + [0], n).assign(step=s) for s, m in zip(steps, means)
    )
    return pd.concat(
        [compare.trajectory_table(ref, ckpt, _run("two_kl", seed=s, alpha=0.5)) for s in seeds]
    )


def test_trajectory_and_monotonicity():
    rising = _trajectory([0.5, 0.6, 0.65, 0.66])
    first = rising[rising["seed"] == 0]
    assert first["step"].tolist() == [0, 80, 160, 240, 320]
    assert first["p_mean"].iloc[0] == pytest.approx(np.mean(P_REF[:4]))  # 0 < p_ref < 1 only
    assert first["se"].iloc[1] == pytest.approx(np.sqrt(4 * 0.25 / 400) / 4)
    m = aggregate.monotonicity(rising)
    assert m["monotone"] and m["trajectory"] == "0.400/0.500/0.600/0.650/0.660"
    wobble = aggregate.monotonicity(_trajectory([0.6, 0.59, 0.61]))  # within noise
    assert wobble["monotone"] and wobble["drop_max"] == pytest.approx(0.01)
    peak = aggregate.monotonicity(_trajectory([0.7, 0.5, 0.52]))  # a real drop after a peak
    assert not peak["monotone"] and peak["drop_max"] == pytest.approx(0.2)


def test_two_kl_lines_say_monotone_or_not():
    at = [float(pred.limit_from(p, BETA / 2, EPS, group_size=G)[1]) if p else 0.0 for p in P_REF]
    t = _table("two_kl", at, seeds=(0, 1), alpha=0.5)
    for means, said in (([0.5, 0.6, 0.65], "rises monotonically"), ([0.7, 0.5], "is NOT monotone")):
        summary = aggregate.summary_table(t, EPS, n_boot=50, trajectories=_trajectory(means))
        text = "\n".join(markdown.trajectory_lines(summary))
        assert "| two_kl_k3_ratio | 2 | 1 |" in text and said in text
        assert "h_G's fixed point at alpha beta = 1" in text
