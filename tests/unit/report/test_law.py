"""The fixed-point law in the summary (grpo_repro.report.law): the compact study's row and its
resampling become summary.json's `fixed_point`, read back into summary.md, from the numbers only."""

import pandas as pd
import pytest

from grpo_repro.report import law

FP = {
    "compact": {"max_steps": 320, "save_steps": 80, "samples": 400},
    "ref_samples": 1600,
    "prompts_per_step": 8,
}


def row(**kw):
    gaps = {"gap_pred_G": 0.03, "gap_pred": 0.08, "gap_stays": 0.15, "gap_to_one": 0.37}
    out = {"run": "grpo_k3_ratio_compact", "variant": "grpo", "beta": 2.0, "G": 8, "n_seeds": 1.0}
    out |= {"n_prompts": 32, "plateau_steps": "240-320", "share_converged": 0.84}
    for k, m in gaps.items():
        out |= {k: m, f"{k}_lo": m - 0.01, f"{k}_hi": m + 0.01}
    out |= {"signed_pred_G": -0.02, "signed_pred_G_lo": -0.03, "signed_pred_G_hi": -0.01}
    out |= {"floor_G": 0.014, "ratio_G": 0.2, "ratio_G_lo": 0.15, "ratio_G_hi": 0.26}
    out |= {"aim_gap_G": 0.03, "aim": "not resolved at this precision"}
    out |= {"p_plateau_mean": 0.63, "p_pred_mean": 0.7, "p_pred_G_mean": 0.66}
    return pd.DataFrame([{**out, "trajectory": "0.476/0.6/0.63", **kw}])


def resampled(lo_own: float) -> pd.DataFrame:
    base = {"run": "grpo_k3_ratio_compact", "beta": 2.0, "G": 8, "prediction": "p*_G"}
    rows = [
        {**base, "samples": 50, "prompts": 8, "own": False, "diff_lo": -0.01},
        {**base, "samples": 400, "prompts": 32, "own": True, "diff_lo": lo_own},
    ]
    for r in rows:
        r |= {"gap_pred_G": 0.03, "gap_better": 0.15, "diff": 0.12, "diff_hi": 0.2}
        r |= {"share_resolved": 0.9, "share_ratio": 0.8, "resolved": r["diff_lo"] > 0}
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    "stays, better, key", [(0.15, "stays at p_ref", "gap_stays"), (0.5, "goes to 1", "gap_to_one")]
)
def test_section_names_the_better_baseline(stays, better, key):
    s = law.section(row(gap_stays=stays), resampled(0.05), FP)
    assert (s["better_baseline"], s["better_baseline_key"]) == (better, key)
    assert s["settings"] == {
        "steps": 320,
        "save_steps": 80,
        "samples": 400,
        "ref_samples": 1600,
        "prompts_per_step": 8,
    }
    assert s["G"] == 8 and isinstance(s["G"], int) and s["aim"] == "not resolved at this precision"
    assert "32 training prompts x 1 seed(s)" in law.headline(s)


@pytest.mark.parametrize("lo_own, resolved", [(0.05, True), (-0.01, False)])
def test_resolved_is_the_own_counts_row(lo_own, resolved):
    s = law.section(row(), resampled(lo_own), FP)
    assert s["resolved"] is resolved and len(s["resolution"]) == 2
    md = "\n".join(law.markdown(s))
    assert ("NOT resolved against" in md) is not resolved
    assert md.count("\n| 50 | 8 |") == 1 and "| yes |" in md


def test_no_study_no_section():
    assert law.section(None, None, FP) is None and law.markdown(None) == law.landing(None) == []


@pytest.mark.parametrize(
    "kw, said",
    [  # the verdict quotes the intervals that decide it (aggregate.aim_verdict)
        ({}, "the gap 0.030 [0.020, 0.040] within 0.03, and 0.20 [0.15, 0.26]"),
        ({}, "(noise floor 0.014): not resolved at this precision."),
        (
            {"gap_pred_G": 0.05, "gap_pred_G_lo": 0.04, "gap_pred_G_hi": 0.06, "aim": "missed"},
            "the gap 0.050 [0.040, 0.060] within 0.03",
        ),
        ({"aim": "missed"}, ": missed."),
        ({"aim": "met"}, ": met."),
    ],
)
def test_the_verdict_quotes_the_intervals_that_decide_it(kw, said):
    s = law.section(row(**kw), resampled(0.05), FP)
    assert said in law.verdict(s), law.verdict(s)
