"""The tabular control (grpo_repro.fixed_point.compare) against the closed-form p*_G, the plateau
fluctuation (compare._fluct_var) against a known variance, and the control's lines in the
factors summary both ways."""

import numpy as np
import pandas as pd
import pytest

from grpo_repro.dynamics import prediction as pred
from grpo_repro.fixed_point import compare, markdown

REF = pd.DataFrame({"prompt_id": ["a", "b", "c", "z"], "p_hat": [0.3, 0.6, 0.8, 0.0]})


@pytest.mark.parametrize("variant", ["grpo", "dr_grpo"])
def test_free_policy_reaches_p_star_g_not_p_star(variant):
    t = compare.control(REF, variant, 2.0, 1e-5, 8, 2, 0.2, 0.03, 1200, 0)
    assert list(t["prompt_id"]) == ["a", "b", "c"]  # p_ref = 0: absorbing, left out
    assert np.abs(t["p_tabular"] - t["p_pred_G"]).max() < 0.02
    p_star = [float(pred.limit_from(p, 2.0, 1e-5, variant=variant)[1]) for p in t["p_ref"]]
    gap_g = np.abs(t["p_tabular"] - t["p_pred_G"]).mean()
    assert np.abs(t["p_tabular"] - p_star).mean() > max(2 * gap_g, 0.005)  # p* is further off
    assert (t["logit_sd"] > 0).all() and (t["logit_sd"] < 0.5).all()


def test_fluctuation_is_the_excess_variance_in_logit_units():
    p = np.array([[0.4, 0.99], [0.5, 0.99], [0.6, 0.99]])
    v = compare._fluct_var(p, np.full(p.shape, 1e12))
    assert v[0] == pytest.approx(0.01 / 0.25**2, rel=1e-6) and np.isnan(v[1])
    binomial_only = compare._fluct_var(np.full((3, 1), 0.5), np.full((3, 1), 100.0))
    assert binomial_only[0] == pytest.approx(-0.0025 / 0.25**2)  # all binomial: negative excess


@pytest.mark.parametrize(
    "lm, said",
    [
        (-0.030, "do not explain the model's gap; -0.031 is what a parametric policy"),
        (0.004, "within what the update leaves by itself"),
    ],
)
def test_tabular_lines_compare_with_the_models_base_run(lm, said):
    t = pd.DataFrame(
        {
            "variant": "grpo",
            "beta": 2.0,
            "G": 8,
            "lr": 0.03,
            "n_iter": 2000,
            "p_tabular": [0.501, 0.701],
            "p_pred_G": [0.5, 0.7],
            "logit_sd": [0.2, 0.2],
        }
    )
    summary = pd.DataFrame(
        [
            {
                "run": "grpo_k3_ratio",
                "beta": 2.0,
                "signed_pred_G": lm,
                "signed_pred_G_lo": lm - 0.012,
                "signed_pred_G_hi": lm + 0.012,
                "logit_sd": 0.15,
            }
        ]
    )
    text = "\n".join(markdown.tabular_lines(t, summary))
    assert "plateau - p*_G +0.001 (mean |gap| 0.001, logit sd 0.20)" in text and said in text
