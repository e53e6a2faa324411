"""Run names and settings of the fixed-point stage (grpo_repro.fixed_point.runs)."""

import pytest

from grpo_repro.fixed_point import runs

FP = {
    "learning_rate": 1e-4,
    "max_steps": 480,
    "save_steps": 80,
    "seed": 3,
    "ref_samples": 400,
    "samples": 200,
}


def test_names_round_trip():
    names = runs.run_names(["grpo/k3_ratio", "mirror/k3"], [2.0, 0.5], 3)
    assert names == [
        "grpo_k3_ratio/beta_2/seed_3",
        "grpo_k3_ratio/beta_0.5/seed_3",
        "mirror_k3/beta_2/seed_3",
        "mirror_k3/beta_0.5/seed_3",
    ]
    assert [runs.parse(n) for n in names][1] == ("grpo_k3_ratio", 0.5, 3)


def test_train_settings_override_only_the_sweep_keys():
    base = {
        "seed": 0,
        "train": {"beta": 0.1, "kl_estimator": "k3", "seeds": [0, 1], "lr": 9},
        "data": {"answer_mode": "strict"},
    }
    out = runs.train_settings(base, FP, 2.0, "k3_ratio")
    assert out["train"] == {
        "beta": 2.0,
        "kl_estimator": "k3_ratio",
        "seeds": [3],
        "lr": 9,
        "learning_rate": 1e-4,
        "max_steps": 480,
        "save_steps": 80,
        "on_pool": True,
    }
    assert out["seed"] == 0 and out["data"] == base["data"] and base["train"]["beta"] == 0.1


@pytest.mark.parametrize("name, samples", [("ref", 400), ("grpo_k3/beta_2/seed_3", 200)])
def test_eval_settings_samples(name, samples):
    base = {"seed": 0, "eval": {"samples": 50, "backend": "hf"}, "temperature": 0.7}
    out = runs.eval_settings(base, FP, name)
    assert out["eval"] == {"samples": samples, "backend": "hf"} and base["eval"]["samples"] == 50


def test_table_paths():
    paths = runs.table_paths("fp", ["a/beta_2/seed_0"], [80, 160])
    assert paths == {
        "ref": "fp/evaluate/ref/pool/step_0.csv",
        "a/beta_2/seed_0@80": "fp/evaluate/a/beta_2/seed_0/pool/step_80.csv",
        "a/beta_2/seed_0@160": "fp/evaluate/a/beta_2/seed_0/pool/step_160.csv",
    }
