"""Stage report: the long table of evaluations, mean success and paired differences (Thm 3) on
fabricated tables with known answers, the seeded trajectory selection (Fig 3)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from grpo_repro import stats
from grpo_repro.report import amplification as amp
from grpo_repro.report import tables
from tests.helpers.report_fixtures import counts_table

VARIANTS = ["grpo", "mirror", "dr_grpo", "mirror_dr"]


# ---------------------------------------------------------------------------------------------
# fabricated tables with known numbers
# ---------------------------------------------------------------------------------------------
def _entries(tmp_path, ks_by_seed, ids):
    """ref table (step 0) and, for each GRPO seed, grpo and dr_grpo tables at steps 10 and 20."""
    p = tmp_path / "ref" / "step_0.csv"
    p.parent.mkdir(parents=True, exist_ok=True)
    counts_table(ids, ks_by_seed[0][0], 50).to_csv(p, index=False)
    entries = [{"variant": "ref", "seed": -1, "split": "test", "step": 0, "path": str(p)}]
    for seed, ks in ks_by_seed.items():
        for v in ("grpo", "dr_grpo"):
            for step in (10, 20):
                p = tmp_path / v / f"seed_{seed}" / f"step_{step}.csv"
                p.parent.mkdir(parents=True, exist_ok=True)
                counts_table(ids, ks[step], 50).to_csv(p, index=False)
                entries.append(
                    {"variant": v, "seed": seed, "split": "test", "step": step, "path": str(p)}
                )
    return tables.load_long(entries, [0, 10, 20])


@pytest.fixture
def known(tmp_path):
    """One GRPO seed. ref successes [0, 10, 20, 30, 50] of 50; step 10: +5 each except the 0 and
    the 50; step 20: +10 each except the 0 (stays 0), prompt d drops to 25 and e stays 50."""
    ks = {0: [0, 10, 20, 30, 50], 10: [0, 15, 25, 35, 50], 20: [0, 20, 30, 25, 50]}
    return _entries(tmp_path, {0: ks}, ["a", "b", "c", "d", "e"]), ks


@pytest.fixture
def two_seeds(tmp_path):
    """Two GRPO seeds with the same pi_ref: seed 0 gains +10 successes on b, c; seed 1 +20."""
    ref = [0, 10, 20, 30, 50]
    ks = {
        0: {0: ref, 10: ref, 20: [0, 20, 30, 30, 50]},
        1: {0: ref, 10: ref, 20: [0, 30, 40, 30, 50]},
    }
    return _entries(tmp_path, ks, ["a", "b", "c", "d", "e"]), ks


def test_eval_entries_layout():
    e = tables.eval_entries("results", ["grpo", "mirror"], [0, 1], ["test", "train"], [0, 5, 10])
    paths = [x["path"] for x in e]
    assert "results/evaluate/ref/test/step_0.csv" in paths
    assert "results/evaluate/grpo/seed_1/train/step_10.csv" in paths
    assert not any("step_0" in p and "ref" not in p for p in paths)  # step 0 only under ref
    assert len(paths) == 2 * (1 + 2 * 2 * 2)


def test_pooled_rows_average_the_seeds(two_seeds):
    long, ks = two_seeds
    pooled = tables.pool_seeds(long)
    g = pooled[(pooled.variant == "grpo") & (pooled.step == 20)].set_index("prompt_id")
    assert g.loc["b", "p_hat"] == pytest.approx((20 + 30) / 100)
    assert g.loc["b", "samples"] == 100 and (g["n_seeds"] == 2).all()
    ref = pooled[(pooled.variant == "grpo") & (pooled.step == 0)]
    assert ref["samples"].eq(50).all()  # pi_ref counted once, not once per seed


def test_paired_difference_across_seeds(two_seeds):
    long, _ = two_seeds
    pr = amp.final_vs_ref(long)
    d = amp.paired_diffs(pr, n_boot=500, seed=0)
    g = d[(d.variant == "grpo")].set_index("seed")
    assert g.loc["0", "mean_diff"] == pytest.approx((0 + 0.2 + 0.2 + 0 + 0) / 5)
    assert g.loc["1", "mean_diff"] == pytest.approx((0 + 0.4 + 0.4 + 0 + 0) / 5)
    pooled = g.loc["all"]
    assert pooled["mean_diff"] == pytest.approx(0.12) and pooled["n_seeds_positive"] == 2
    assert pooled["low"] <= pooled["mean_diff"] <= pooled["high"]
    assert pooled["method"].startswith("crossed bootstrap")


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
    counts_table(["x", "y"], [1, 2], 50).to_csv(a, index=False)
    counts_table(["x", "z"], [1, 2], 50).to_csv(b, index=False)
    entries = [
        {"variant": "ref", "seed": -1, "split": "test", "step": 0, "path": str(a)},
        {"variant": "grpo", "seed": 0, "split": "test", "step": 5, "path": str(b)},
    ]
    with pytest.raises(ValueError, match="prompt set differs"):
        tables.load_long(entries, [0, 5])


def test_eval_table_checks_columns(tmp_path):
    p = tmp_path / "t.csv"
    pd.DataFrame({"prompt_id": ["a"], "successes": [1]}).to_csv(p, index=False)
    with pytest.raises(ValueError, match="missing columns"):
        tables.read_eval_table(p)


def test_mean_by_step_known_means(known):
    long, ks = known
    m = amp.mean_by_step(long, n_boot=500, seed=0)
    for step, k in ks.items():
        row = m[(m.variant == "grpo") & (m.step == step) & (m.seed == "all")].iloc[0]
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
            "seed": 0,
            "split": "test",
            "step": 0,
            "checkpoint": 0,
            "prompt_id": ids,
            "p_hat": 0.3,
            "p_hat_lenient": 0.3,
        }
    )
    r = amp.mean_by_step(long, 200, 0).set_index("seed").loc["all"]
    assert (r["mean"], r["low"], r["high"]) == pytest.approx((0.3, 0.3, 0.3))


def test_final_vs_ref_sides_and_shares(known):
    long, _ = known
    pr = amp.final_vs_ref(long)
    g = pr[(pr.variant == "grpo") & (pr.seed == "all")].set_index("prompt_id")
    assert g.loc["a", "side"] == "on" and g.loc["e", "side"] == "on"
    assert g.loc["b", "side"] == "above" and g.loc["c", "side"] == "above"
    assert g.loc["d", "side"] == "below"
    assert (g["final_step"] == 20).all()
    sh = amp.shares(pr).set_index(["variant", "seed"]).loc[("grpo", "all")]
    assert (sh.n_above, sh.n_on, sh.n_below) == (2, 2, 1)
    assert sh.share_above == pytest.approx(0.4)


def test_paired_difference_known(known):
    long, ks = known
    pd_ = amp.paired_diffs(amp.final_vs_ref(long), n_boot=2000, seed=0)
    r = pd_[(pd_.variant == "grpo") & (pd_.seed == "0")].iloc[0]
    d = (np.array(ks[20]) - np.array(ks[0])) / 50  # [0, .2, .2, -.1, 0]
    assert r["mean_diff"] == pytest.approx(d.mean())
    _, low, high = stats.bootstrap_mean_ci(
        d, n_boot=2000, seed=amp.boot_seed(0, "paired", "test", "grpo")
    )
    assert (r["low"], r["high"]) == pytest.approx((low, high))
    assert d.min() <= r["low"] <= r["mean_diff"] <= r["high"] <= d.max()
    one = pd_[(pd_.variant == "grpo") & (pd_.seed == "all")].iloc[0]  # one seed: the same mean
    assert one["mean_diff"] == pytest.approx(d.mean()) and one["n_seeds"] == 1
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


def _cut(path, text):
    path.write_text(text)
    with pytest.raises(ValueError) as err:
        tables.read_eval_table(path)
    return str(err.value)


def test_eval_table_refuses_a_damaged_table(tmp_path):
    """A table cut mid-row, a NaN count or a row count that differs from the sidecar's is refused
    (a cut table was read with NaN counts, and shares changed without an error)."""
    p = tmp_path / "step_4.csv"
    counts_table(["a", "b", "c"], [1, 2, 3], 16).to_csv(p, index=False)
    text = p.read_text()
    assert len(tables.read_eval_table(p)) == 3
    assert "last row is cut" in _cut(p, text[: text.rindex(",") - 2])
    head, *rows = text.splitlines()
    rows[1] = ",".join(rows[1].split(",")[:2] + [""] + rows[1].split(",")[3:])  # samples: NaN
    assert "step_4.csv:3: no value in column samples" in _cut(p, "\n".join([head, *rows]) + "\n")
    rows = text.splitlines()[1:]
    assert "not a whole number" in _cut(
        p, text.replace(rows[0].split(",", 2)[1] + ",16", "1.5,16", 1)
    )
    p.write_text(text)
    (tmp_path / "step_4.json").write_text('{"n_prompts": 4}')
    assert "3 rows, its sidecar" in _cut(p, text)
