"""The fixed-point test's comparison (grpo_repro.fixed_point.compare) on fabricated evaluation
tables with known answers: predictions are the stable fixed points of h reached from p_ref (Thm 2)
or 1 for mirror (Thm 5), the plateau and its criterion, the gaps to the prediction and to both
baselines, the KL columns (Bernoulli KL of the Gibbs policy), and the markdown verdicts."""

import numpy as np
import pandas as pd
import pytest

from grpo_repro.dynamics import prediction as pred
from grpo_repro.fixed_point import compare, markdown
from tests.helpers.report_fixtures import counts_table

EPS, BETA = 1e-5, 2.0


@pytest.fixture
def fabricated():
    ids = ["a", "b", "c", "d"]
    ref = counts_table(ids, [40, 120, 200, 0], 400)  # p_ref 0.1, 0.3, 0.5, 0
    target = [float(pred.limit_from(p, BETA, EPS)[1]) if p > 0 else 0.0 for p in (0.1, 0.3, 0.5)]
    k = [round(200 * t) for t in target] + [0]  # checkpoints sitting at p*
    ckpt = pd.concat([counts_table(ids, k, 200).assign(step=s) for s in (80, 160, 240)])
    kl = pd.DataFrame({"prompt_id": ids, "kl": [0.1, 0.2, 0.3, 0.0], "kl_se": 0.01})
    return ref, ckpt, kl, target


def test_prediction_plateau_and_gaps(fabricated):
    ref, ckpt, kl, target = fabricated
    t = compare.prompt_table(ref, ckpt, kl, "grpo_k3_ratio", BETA, EPS).assign(
        run="grpo", beta=BETA
    )
    assert t["kind"].tolist()[:3] == ["fixed_point"] * 3 and t["kind"].iloc[3] == "absorbing"
    assert t["p_pred"].iloc[:3].to_numpy() == pytest.approx(target)
    assert (t["p_pred_lo"] <= t["p_pred"] + 1e-12).all() and (
        t["p_pred"] <= t["p_pred_hi"] + 1e-12
    ).all()
    assert t["plateau"].all() and t["plateau_steps"].iloc[0] == "160-240"
    assert t["covered"].iloc[:3].all()
    assert t["kl_gibbs"].iloc[:3].to_numpy() == pytest.approx(
        [pred.gibbs_kl(p, q) for p, q in zip(target, (0.1, 0.3, 0.5))]
    )
    s = compare.summary_table(t, n_boot=200).iloc[0]
    assert s["n_prompts"] == 3  # p_ref = 0 is excluded (absorbing)
    p = t["p_plateau"].iloc[:3].to_numpy()
    assert s["gap_stays"] == pytest.approx(np.mean(np.abs(p - [0.1, 0.3, 0.5])))
    assert s["gap_to_one"] == pytest.approx(np.mean(1 - p))
    assert s["gap_prediction"] < 0.01 and s["gap_ratio_to_best_baseline"] < 0.1
    assert "closer than the better baseline" in markdown.verdict(s)


def test_mirror_is_predicted_to_go_to_one(fabricated):
    ref, ckpt, kl, _ = fabricated
    t = compare.prompt_table(ref, ckpt, kl, "mirror_k3_ratio", BETA, EPS)
    assert t["p_pred"].tolist() == [1.0, 1.0, 1.0, 0.0]


def test_no_plateau_is_flagged():
    ids = ["a", "b"]
    ref = counts_table(ids, [40, 120], 400)
    ckpt = pd.concat(
        [
            counts_table(ids, [20, 60], 200).assign(step=80),
            counts_table(ids, [120, 180], 200).assign(step=160),
        ]
    )  # still rising fast
    kl = pd.DataFrame({"prompt_id": ids, "kl": 0.1, "kl_se": 0.01})
    t = compare.prompt_table(ref, ckpt, kl, "grpo_k3", BETA, EPS)
    assert not t["plateau"].any()
