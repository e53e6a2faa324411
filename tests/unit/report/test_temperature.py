"""Amplification against sharpening (grpo_repro.report.temperature): pass@k against the binomial
closed form, the best temperature chosen on val and never on test, the paired best-vs-best
difference, the verdict taken from the interval, and the evaluation work list."""

from __future__ import annotations

from math import comb

import numpy as np
import pandas as pd
import pytest

from grpo_repro import stats
from grpo_repro.evaluate import tasks as ev_tasks
from grpo_repro.report import temperature as tp


@pytest.mark.parametrize(
    "n, c, k",
    [
        (50, 0, 1),
        (50, 50, 1),
        (50, 1, 1),
        (50, 3, 10),
        (50, 10, 41),
        (50, 10, 40),
        (8, 2, 7),
        (1, 1, 1),
        (400, 2, 256),
        (400, 0, 400),
    ],
)
def test_pass_at_k_is_one_minus_the_binomial_ratio(n, c, k):
    want = 1 - comb(n - c, k) / comb(n, k)
    assert stats.pass_at_k([n], [c], k)[0] == pytest.approx(want, abs=1e-12)


def test_pass_at_1_is_the_success_rate_and_k_beyond_n_is_refused():
    n, c = np.array([50, 50, 20]), np.array([7, 0, 20])
    assert stats.pass_at_k(n, c, 1) == pytest.approx(c / n)
    with pytest.raises(ValueError, match="1 <= k <= n"):
        stats.pass_at_k([5], [1], 6)


def _long(rates: dict, n_prompts: int = 40, samples: int = 50, seeds=(0, 1)) -> pd.DataFrame:
    """Tables where every prompt of (variant, split, temperature) has success rate rates[...]
    (a float, or a function of the prompt index)."""
    rows = []
    for (variant, split, t), p in rates.items():
        for sd in [-1] if variant == "ref" else seeds:
            for i in range(n_prompts):
                q = p(i) if callable(p) else p
                k = round(q * samples)
                rows.append(
                    {
                        "prompt_id": f"{split}_{i:03d}",
                        "samples": samples,
                        "successes": k,
                        "p_hat": k / samples,
                        "variant": variant,
                        "seed": sd,
                        "split": split,
                        "temperature": t,
                        "klass": "misconception" if i % 4 == 0 else "other",
                    }
                )
    return pd.DataFrame(rows)


def test_best_temperature_is_chosen_on_val_and_reported_on_test():
    # on val pi_ref is best at T=0.5 and grpo at T=1; on test the order is reversed, so a choice
    # made on test would pick other temperatures
    rates = {
        ("ref", "val", 1.0): 0.4,
        ("ref", "val", 0.5): 0.6,
        ("ref", "test", 1.0): 0.7,
        ("ref", "test", 0.5): 0.5,
        ("grpo", "val", 1.0): 0.8,
        ("grpo", "val", 0.5): 0.7,
        ("grpo", "test", 1.0): 0.6,
        ("grpo", "test", 0.5): 0.9,
    }
    long = _long(rates)
    curve = tp.temperature_curve(long, n_boot=200, seed=0)
    best = tp.best_vs_best(long, curve, "test", n_boot=200, seed=0)
    row = best[(best["seed"] == "all") & (best["klass"] == "all")].iloc[0]
    assert row["selected_on"] == "val" and row["t_ref"] == 0.5 and row["t_variant"] == 1.0
    assert row["mean_variant"] == pytest.approx(0.6) and row["mean_ref"] == pytest.approx(0.5)
    assert row["mean_diff"] == pytest.approx(0.1) and row["low"] == pytest.approx(0.1)
    per_seed = best[(best["seed"] != "all") & (best["klass"] == "all")]
    assert list(per_seed["seed"]) == ["0", "1"]
    assert list(per_seed["mean_diff"]) == pytest.approx([0.1, 0.1])
    # without a val split the choice falls back to the split itself, and says so
    best_test = tp.best_vs_best(
        long[long["split"] == "test"], curve[curve["split"] == "test"], "test", n_boot=200, seed=0
    )
    r = best_test[(best_test["seed"] == "all") & (best_test["klass"] == "all")].iloc[0]
    assert r["selected_on"] == "test" and r["t_ref"] == 1.0 and r["t_variant"] == 0.5


def test_curve_splits_the_classes_and_pools_seeds():
    rates = {("ref", "test", 1.0): lambda i: 0.1 if i % 4 == 0 else 0.9, ("grpo", "test", 1.0): 0.5}
    curve = tp.temperature_curve(_long(rates), n_boot=100, seed=0)
    ref = curve[(curve["variant"] == "ref") & (curve["seed"] == "all")].set_index("klass")
    assert ref.loc["misconception", "mean"] == pytest.approx(0.1)
    assert ref.loc["other", "mean"] == pytest.approx(0.9)
    assert ref.loc["all", "n_prompts"] == 40 and ref.loc["misconception", "n_prompts"] == 10
    assert set(curve[curve["variant"] == "grpo"]["seed"]) == {"all", "0", "1"}


@pytest.mark.parametrize(
    "low, high, word",
    [(0.02, 0.2, "beats"), (-0.05, 0.03, "does not differ from"), (-0.2, -0.01, "falls below")],
)
def test_verdict_follows_the_interval(low, high, word):
    row = {
        "variant": "grpo",
        "t_variant": 1.0,
        "t_ref": 0.0,
        "selected_on": "val",
        "split": "test",
        "mean_diff": (low + high) / 2,
        "low": low,
        "high": high,
        "n_seeds_above": 2,
        "n_seeds": 3,
    }
    text = tp.verdict(row, 1.0)
    assert f" {word} pi_ref at its best (greedy" in text


def test_tasks_evaluate_every_checkpoint_and_the_final_one_at_every_temperature():
    config = {
        "train": {"temperature": 1.0},
        "eval": {
            "temperature": None,
            "splits": ["test", "train"],
            "temperatures": [1.0, 0.7, 0],
            "temperature_splits": ["test", "val"],
        },
    }
    got = [
        (t.step, t.split, t.temperature)
        for t in ev_tasks.tasks("r", "grpo/seed_0", [0, 40, 80], config)
    ]
    assert got == [
        (40, "test", None),
        (40, "train", None),
        (80, "test", None),
        (80, "train", None),
        (80, "test", 0.7),
        (80, "test", 0.0),
        (80, "val", None),
        (80, "val", 0.7),
        (80, "val", 0.0),
    ]
    t = ev_tasks.tasks("r", "grpo/seed_0", [0, 40, 80], config)[5]
    assert t.csv == "r/evaluate/grpo/seed_0/test/step_80_T0.csv"
    assert ev_tasks.task_splits(config) == ["test", "train", "val"]
    config["eval"]["temperatures"] = [1.0]  # only the evaluation temperature: no extra tables
    assert len(ev_tasks.tasks("r", "ref", [0, 40], config)) == 2


def test_summary_section_names_what_it_compares_and_its_verdict():
    from grpo_repro.report import markdown, summary

    rates = {
        ("ref", "val", 1.0): 0.4,
        ("ref", "val", 0.0): 0.6,
        ("ref", "test", 1.0): 0.4,
        ("ref", "test", 0.0): 0.6,
        ("grpo", "val", 1.0): 0.7,
        ("grpo", "val", 0.0): 0.8,
        ("grpo", "test", 1.0): 0.7,
        ("grpo", "test", 0.0): lambda i: 0.9 if i % 2 else 0.7,
    }
    long = _long(rates)
    curve = tp.temperature_curve(long, n_boot=200, seed=0)
    best = tp.best_vs_best(long, curve, "test", n_boot=200, seed=0)
    config = {
        "variants": ["grpo"],
        "eval": {"temperature": None, "splits": ["test"]},
        "train": {"temperature": 1.0},
    }
    s = summary.sharpening(best, curve, config)
    md = "\n".join(markdown.sharpening_section(s))
    assert "best temperature against best temperature" in md
    assert "| all (40 prompts) | grpo (greedy) | greedy | 80.0% | 60.0% | 20.0% [" in md
    assert s["sharpening_verdict"]["grpo"].startswith("grpo at its best temperature (greedy) beats")
    by_class = s["sharpening_verdict_by_class"]
    assert any("on test (misconception problems) by +" in v for v in by_class)
    assert summary.sharpening(None, None, config) == {}  # without eval.temperatures
