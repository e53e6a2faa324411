"""The compact study's check and its resampling (grpo_repro.fixed_point.aggregate,
grpo_repro.fixed_point.aggregate) on plateaus drawn at p*_G, the closed-form truth of Thm 2-3 at
finite G: the check passes with h_G's prediction and fails when the prediction is computed with
the population map h (the check can fail)."""

import numpy as np
import pandas as pd
import pytest

from grpo_repro.dynamics import prediction as pred
from grpo_repro.fixed_point import aggregate, compare
from grpo_repro.fixed_point.runs import Run
from tests.helpers.report_fixtures import counts_table

EPS, G, BETA = 1e-5, 8, 2.0
RUN = Run("grpo", "k3_ratio", "compact", BETA, 0, G)


def tables(n_prompts=32, ref_samples=1600, samples=400, seed=0):
    """pi_ref's table and four checkpoints' (the last two at p*_G) of one run, binomial draws."""
    rng = np.random.default_rng(seed)
    ids = [f"train-{i}" for i in range(n_prompts)]
    p_ref = rng.uniform(0.1, 0.8, n_prompts)
    p_g = pred.orbit_limits(p_ref, BETA, EPS, group_size=G)["a"]
    ref = counts_table(ids, rng.binomial(ref_samples, p_ref), ref_samples)
    steps = []
    for step, frac in ((40, 0.6), (80, 0.9), (120, 1.0), (160, 1.0)):
        p = p_ref + frac * (p_g - p_ref)
        steps.append(counts_table(ids, rng.binomial(samples, p), samples).assign(step=step))
    kl = pd.DataFrame({"prompt_id": ids, "kl": 0.1, "kl_se": 0.01})
    return ref, pd.concat(steps, ignore_index=True), kl


def check(ref, checkpoints, kl):
    prompts = compare.prompt_table(ref, checkpoints, kl, RUN, EPS, G)
    return prompts, aggregate.summary_table(prompts, EPS, n_boot=200)


def test_plateaus_at_p_star_g_pass_the_check_and_are_resolved():
    prompts, summary = check(*tables())
    (row,) = summary.to_dict("records")
    assert row["aim"] == aggregate.MET, row
    assert row["gap_pred_G"] <= 0.03 and row["gap_pred"] > row["gap_pred_G"] + 0.02
    res = aggregate.resolution_table(prompts, EPS, [50], [8], n_resamples=200)
    own = res[res["own"]].iloc[0]
    assert (own["samples"], own["prompts"]) == (400, 32) and own["resolved"]
    assert own["diff_lo"] > 0.05  # the better baseline ("stays") misses by far more
    assert set(zip(res["samples"], res["prompts"])) == {(50, 8), (50, 32), (400, 8), (400, 32)}
    # fewer samples and prompts: the noise floor grows, the difference's interval widens
    small = res[(res["samples"] == 50) & (res["prompts"] == 8)].iloc[0]
    assert small["diff_hi"] - small["diff_lo"] > own["diff_hi"] - own["diff_lo"]


def test_the_check_fails_when_p_star_g_is_computed_with_the_population_map(monkeypatch):
    """The same plateaus, the prediction (and the noise floor) computed with h instead of h_G:
    the gap to the prediction exceeds the aim, and the verdict says so."""
    data = tables()
    real = pred.orbit_limits
    monkeypatch.setattr(pred, "orbit_limits", lambda *a, group_size=None, **k: real(*a, **k))
    _, summary = check(*data)
    (row,) = summary.to_dict("records")
    assert row["aim"] == aggregate.MISSED, row
    assert row["gap_pred_G_lo"] > row["aim_gap_G"]


@pytest.mark.parametrize("group_size, label", [("run", "p*_G"), (None, "p*")])
def test_resolution_names_the_map_it_predicts_with(group_size, label):
    prompts, _ = check(*tables(n_prompts=16))
    res = aggregate.resolution_table(prompts, EPS, [], None, n_resamples=50, group_size=group_size)
    assert list(res["prediction"]) == [label] and bool(res["own"].iloc[0])


@pytest.mark.parametrize("group_size", [G, None])
def test_limits_iterated_once_per_distinct_p_ref_equal_the_whole_array(group_size, monkeypatch):
    """aggregate._limits iterates the map on the distinct resampled p_ref values only: the same
    numbers, bit for bit, as iterating it on every element (boundaries 0 and 1 absorbing)."""
    prompts, _ = check(*tables(n_prompts=8))
    rng = np.random.default_rng(1)
    p_ref = rng.binomial(50, rng.uniform(0, 1, (40, 8))) / 50
    p_ref[0, :2] = 0.0, 1.0
    calls, real = [], pred.orbit_limits

    def counted(p, *args, **kwargs):
        calls.append(p.size)
        return real(p, *args, **kwargs)

    monkeypatch.setattr(pred, "orbit_limits", counted)
    got = aggregate._limits(p_ref, prompts, EPS, group_size)
    whole = real(np.clip(p_ref, 1e-9, 1 - 1e-9), BETA, EPS, n_iter=400, group_size=group_size)
    want = np.where((p_ref > 0) & (p_ref < 1), whole["last"], p_ref)
    assert np.array_equal(got, want)
    assert calls == [len(np.unique(p_ref))] and calls[0] < p_ref.size / 4
