"""How many val samples choosing a temperature needs (grpo_repro.report.temperature): a clear winner
is chosen by any subsample, a near tie is not, and the regret is the n-sample gap."""

import pandas as pd
import pytest

from grpo_repro.report.temperature import best, choice_agreement


def long_table(successes_by_t: dict[float, list[int]], n: int = 50) -> pd.DataFrame:
    rows = []
    for t, succ in successes_by_t.items():
        for i, c in enumerate(succ):
            m = 1 if t == 0 else n
            rows.append(
                {"variant": "v", "seed": 0, "temperature": t, "prompt_id": f"p{i}", "samples": m,
                 "successes": c, "p_hat": c / m}
            )  # fmt: skip
    return pd.DataFrame(rows)


@pytest.mark.parametrize(
    "means,expected",
    [({1.0: 0.5, 0.5: 0.7, 0.0: 0.6}, 0.5), ({1.0: 0.7, 0.5: 0.7}, 1.0), ({0.0: 0.9}, 0.0)],
)
def test_best_takes_the_highest_mean_ties_to_the_higher_temperature(means, expected):
    assert best(pd.Series(means)) == expected


def test_a_clear_winner_is_always_chosen():
    long = long_table({1.0: [10] * 40, 0.5: [45] * 40, 0.0: [0] * 40})
    out = choice_agreement(long, [5, 10], n_resamples=200, seed=0)
    assert list(out["k"]) == [5, 10] and (out["chosen"] == 0.5).all()
    assert (out["agree"] == 1.0).all() and (out["regret"] == 0.0).all()


def test_a_near_tie_is_not_and_its_regret_is_the_gap():
    long = long_table({1.0: [25] * 20, 0.7: [26] * 20})  # 0.50 against 0.52
    out = choice_agreement(long, [5], n_resamples=400, seed=0).iloc[0]
    assert out["chosen"] == 0.7 and 0.3 < out["agree"] < 0.9
    assert out["regret"] == pytest.approx((1 - out["agree"]) * 0.02)


def test_k_at_or_above_the_recorded_samples_is_skipped():
    out = choice_agreement(long_table({1.0: [3, 4], 0.5: [4, 4]}, n=10), [5, 10], 10, seed=0)
    assert list(out["k"]) == [5]
