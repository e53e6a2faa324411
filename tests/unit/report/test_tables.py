"""Stage report: the long table of evaluations, mean success and paired differences (Thm 3) on
fabricated tables with known answers, the seeded trajectory selection (Fig 3)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from grpo_repro import stats
from grpo_repro.report import amplification as amp
from grpo_repro.report import tables

VARIANTS = ["grpo", "mirror", "dr_grpo", "mirror_dr"]


# ---------------------------------------------------------------------------------------------
# fabricated tables with known numbers
# ---------------------------------------------------------------------------------------------
def _table(ids, k, n=50):
    k = np.asarray(k)
    lo, hi = stats.wilson(k, np.full_like(k, n))
    return pd.DataFrame(
        {
            "prompt_id": ids,
            "successes": k,
            "samples": n,
            "p_hat": k / n,
            "ci_low": lo,
            "ci_high": hi,
            "successes_lenient": k,
            "p_hat_lenient": k / n,
        }
    )


@pytest.fixture
def known(tmp_path):
    """ref successes [0, 10, 20, 30, 50] of 50; step 10: +5 each except the 0 and the 50; step 20:
    +10 each except the 0 (stays 0), prompt d drops to 25 and e stays 50."""
    ids = ["a", "b", "c", "d", "e"]
    ks = {0: [0, 10, 20, 30, 50], 10: [0, 15, 25, 35, 50], 20: [0, 20, 30, 25, 50]}
    entries = []
    for split in ("test",):
        p = tmp_path / "eval" / "ref" / split / "step_0.csv"
        p.parent.mkdir(parents=True)
        _table(ids, ks[0]).to_csv(p, index=False)
        entries.append({"variant": "ref", "split": split, "step": 0, "path": str(p)})
        for v in ("grpo", "dr_grpo"):
            for step in (10, 20):
                p = tmp_path / "eval" / v / split / f"step_{step}.csv"
                p.parent.mkdir(parents=True, exist_ok=True)
                _table(ids, ks[step]).to_csv(p, index=False)
                entries.append({"variant": v, "split": split, "step": step, "path": str(p)})
    return tables.load_long(entries, ["grpo", "dr_grpo"], [0, 10, 20]), ks


def test_eval_entries_layout():
    e = tables.eval_entries("results", ["grpo", "mirror"], ["test", "train"], [0, 5, 10])
    paths = [x["path"] for x in e]
    assert "results/evaluate/ref/test/step_0.csv" in paths
    assert "results/evaluate/grpo/train/step_10.csv" in paths
    assert not any("grpo/test/step_0" in p for p in paths)  # step 0 only under ref
    assert len(paths) == 2 * (1 + 2 * 2)


def test_long_table_shares_ref(known):
    long, ks = known
    assert set(long.columns) >= {
        "variant",
        "split",
        "step",
        "checkpoint",
        "prompt_id",
        "p_hat",
        "ci_low",
    }
    for v in ("grpo", "dr_grpo"):
        ref = long[(long.variant == v) & (long.step == 0)].sort_values("prompt_id")
        assert ref["successes"].tolist() == ks[0]
        assert (ref["source"] == "ref").all()
    assert sorted(long["checkpoint"].unique()) == [0, 1, 2]


def test_long_table_rejects_mismatched_prompts(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    _table(["x", "y"], [1, 2]).to_csv(a, index=False)
    _table(["x", "z"], [1, 2]).to_csv(b, index=False)
    entries = [
        {"variant": "ref", "split": "test", "step": 0, "path": str(a)},
        {"variant": "grpo", "split": "test", "step": 5, "path": str(b)},
    ]
    with pytest.raises(ValueError, match="prompt set differs"):
        tables.load_long(entries, ["grpo"], [0, 5])


def test_eval_table_checks_columns(tmp_path):
    p = tmp_path / "t.csv"
    pd.DataFrame({"prompt_id": ["a"], "successes": [1]}).to_csv(p, index=False)
    with pytest.raises(ValueError, match="missing columns"):
        tables.read_eval_table(p)


def test_mean_by_step_known_means(known):
    long, ks = known
    m = amp.mean_by_step(long, n_boot=500, seed=0)
    for step, k in ks.items():
        row = m[(m.variant == "grpo") & (m.step == step)].iloc[0]
        assert row["mean"] == pytest.approx(np.mean(k) / 50)
        assert row["low"] <= row["mean"] <= row["high"]
        assert row["n_prompts"] == 5
    # step 0 is pi_ref for every variant: identical numbers, identical interval
    r0 = m[m.step == 0]
    assert r0["low"].nunique() == 1 and r0["high"].nunique() == 1


def test_mean_interval_is_the_stats_bootstrap():
    """A constant success rate has a degenerate interval; a known sample matches stats directly."""
    ids = [str(i) for i in range(8)]
    long = pd.DataFrame(
        {
            "variant": "grpo",
            "split": "test",
            "step": 0,
            "checkpoint": 0,
            "prompt_id": ids,
            "p_hat": 0.3,
            "p_hat_lenient": 0.3,
        }
    )
    r = amp.mean_by_step(long, 200, 0).iloc[0]
    assert (r["mean"], r["low"], r["high"]) == pytest.approx((0.3, 0.3, 0.3))


def test_final_vs_ref_sides_and_shares(known):
    long, _ = known
    pr = amp.final_vs_ref(long)
    g = pr[pr.variant == "grpo"].set_index("prompt_id")
    assert g.loc["a", "side"] == "on" and g.loc["e", "side"] == "on"
    assert g.loc["b", "side"] == "above" and g.loc["c", "side"] == "above"
    assert g.loc["d", "side"] == "below"
    assert (g["final_step"] == 20).all()
    sh = amp.shares(pr).set_index("variant").loc["grpo"]
    assert (sh.n_above, sh.n_on, sh.n_below) == (2, 2, 1)
    assert sh.share_above == pytest.approx(0.4)


def test_paired_difference_known(known):
    long, ks = known
    pd_ = amp.paired_diffs(amp.final_vs_ref(long), n_boot=2000, seed=0)
    r = pd_[pd_.variant == "grpo"].iloc[0]
    d = (np.array(ks[20]) - np.array(ks[0])) / 50  # [0, .2, .2, -.1, 0]
    assert r["mean_diff"] == pytest.approx(d.mean())
    se = d.std(ddof=1) / np.sqrt(d.size)
    assert r["se"] == pytest.approx(se)
    assert r["low_normal"] == pytest.approx(d.mean() - stats.Z95 * se)
    assert r["high_normal"] == pytest.approx(d.mean() + stats.Z95 * se)
    assert d.min() <= r["low"] <= r["mean_diff"] <= r["high"] <= d.max()
    assert r["mean_ref"] == pytest.approx(np.mean(ks[0]) / 50)
    assert r["mean_final"] == pytest.approx(np.mean(ks[20]) / 50)


def test_trajectory_selection_is_seeded():
    ids = [f"q{i}" for i in range(100)]
    a = tables.select_prompts(ids, 7, 0, "test")
    assert a == tables.select_prompts(list(reversed(ids)), 7, 0, "test")
    assert len(set(a)) == 7
    assert a != tables.select_prompts(ids, 7, 1, "test")
    assert len(tables.select_prompts(ids[:3], 7, 0, "test")) == 3


# ---------------------------------------------------------------------------------------------
