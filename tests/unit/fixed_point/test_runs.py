"""Run names, studies and settings of the fixed-point stage (grpo_repro.fixed_point.runs)."""

import pytest

from grpo_repro.fixed_point import runs

FP = {
    "betas": [2.0, 5.0],
    "runs": ["grpo/k3_ratio", "dr_grpo/k3_ratio"],
    "seeds": [3, 4],
    "sweep_beta": 2.0,
    "group_sizes": [4, 16],
    "runs_first_seed": ["mirror/k3"],
    "factors": {"mu1": {"num_iterations": 1}, "lr_half": {"learning_rate": 5e-5}},
    "learning_rate": 1e-4,
    "max_steps": 480,
    "save_steps": 80,
    "long_steps": None,
    "ref_samples": 400,
    "samples": 200,
}


@pytest.mark.parametrize(
    "name, want",
    [
        ("grpo_k3_ratio/beta_2/seed_3", ("grpo", "k3_ratio", "", 2.0, 3)),
        ("grpo_k3/beta_0.5/seed_0", ("grpo", "k3", "", 0.5, 0)),
        ("dr_grpo_k3_ratio/beta_5/seed_1", ("dr_grpo", "k3_ratio", "", 5.0, 1)),
        ("grpo_k3_ratio_G16/beta_2/seed_2", ("grpo", "k3_ratio", "G16", 2.0, 2)),
        ("grpo_k3_G4/beta_2/seed_2", ("grpo", "k3", "G4", 2.0, 2)),
        ("grpo_k3_ratio_lr_half/beta_2/seed_3", ("grpo", "k3_ratio", "lr_half", 2.0, 3)),
        ("mirror_dr_k3/beta_3/seed_0", ("mirror_dr", "k3", "", 3.0, 0)),
    ],
)
def test_names_round_trip(name, want):
    run = runs.parse(name)
    assert (run.variant, run.kl, run.setting, run.beta, run.seed) == want
    assert run.name == name


@pytest.mark.parametrize(
    "bad", ["ppo_k3/beta_2/seed_0", "grpo_kl/beta_2/seed_0", "grpo_k3_X/beta_2/seed_0"]
)
def test_bad_names_are_refused(bad):
    with pytest.raises(ValueError, match="not a fixed-point run name"):
        runs.parse(bad)


def test_studies():
    main = [r.name for r in runs.study_runs(FP, "main", 8)]
    assert len(main) == 2 * 2 * 2 and "dr_grpo_k3_ratio/beta_5/seed_4" in main
    groups = [r.name for r in runs.study_runs(FP, "groups", 8)]
    assert groups == [
        f"grpo_k3_ratio{s}/beta_2/seed_{seed}" for s in ("_G4", "", "_G16") for seed in (3, 4)
    ]
    assert [r.group_size(8) for r in runs.study_runs(FP, "groups", 8)][::2] == [4, 8, 16]
    factors = [r.name for r in runs.study_runs(FP, "factors", 8)]
    assert factors == [
        "mirror_k3/beta_2/seed_3",
        "mirror_k3/beta_5/seed_3",
        "grpo_k3_ratio/beta_2/seed_3",
        "grpo_k3_ratio_mu1/beta_2/seed_3",
        "grpo_k3_ratio_lr_half/beta_2/seed_3",
        "dr_grpo_k3_ratio/beta_2/seed_3",  # every base run at sweep_beta (main's, not retrained)
    ]
    every = [r.name for r in runs.all_runs(FP, 8)]
    assert len(every) == len(set(every)) == 8 + 4 + 4  # shared base runs trained once
    long = runs.study_runs({**FP, "long_steps": 960}, "factors", 8)
    assert sorted({r.name for r in long} - set(factors)) == [
        "dr_grpo_k3_ratio_long/beta_2/seed_3",
        "grpo_k3_ratio_long/beta_2/seed_3",
    ]
    assert len(runs.all_runs({**FP, "long_steps": 960}, 8)) == 16 + 2  # dr_grpo base: main's
    with pytest.raises(ValueError, match="unknown study"):
        runs.study_runs(FP, "nope", 8)


def test_train_settings_override_only_the_sweep_keys():
    base = {
        "seed": 0,
        "train": {
            "beta": 0.1,
            "kl_estimator": "k3",
            "seeds": [0, 1],
            "lr": 9,
            "num_generations": 8,
        },
        "data": {"answer_mode": "strict"},
    }
    out = runs.train_settings(base, FP, runs.parse("grpo_k3_ratio/beta_2/seed_3"))
    assert out["train"] == {
        "beta": 2.0,
        "kl_estimator": "k3_ratio",
        "seeds": [3],
        "lr": 9,
        "num_generations": 8,
        "learning_rate": 1e-4,
        "max_steps": 480,
        "save_steps": 80,
        "on_pool": True,
    }
    assert out["seed"] == 0 and out["data"] == base["data"] and base["train"]["beta"] == 0.1
    g16 = runs.train_settings(base, FP, runs.parse("grpo_k3_ratio_G16/beta_2/seed_3"))
    assert g16["train"] == {**out["train"], "num_generations": 16}
    lr = runs.train_settings(base, FP, runs.parse("grpo_k3_ratio_lr_half/beta_2/seed_3"))
    assert lr["train"] == {**out["train"], "learning_rate": 5e-5}
    fp = {**FP, "long_steps": 960}
    long = runs.train_settings(base, fp, runs.parse("grpo_k3_ratio_long/beta_2/seed_3"))
    assert long["train"] == {**out["train"], "max_steps": 960}


def test_tabular_variants_leave_out_mirror():
    fp = {"runs": ["grpo/k3_ratio", "mirror/k3_ratio", "grpo/k3", "dr_grpo/k3_ratio"]}
    assert runs.tabular_variants(fp) == ["grpo", "dr_grpo"]


def test_steps_of_base_and_long_runs():
    fp = {**FP, "long_steps": 960}
    assert runs.steps(fp, "grpo_k3_ratio/beta_2/seed_3") == [80, 160, 240, 320, 400, 480]
    assert runs.steps(fp, runs.parse("dr_grpo_k3_ratio_long/beta_2/seed_0"))[-3:] == [800, 880, 960]
    assert len(runs.steps(fp, "grpo_k3_ratio_lr_half/beta_2/seed_0")) == 6


@pytest.mark.parametrize("name, samples", [("ref", 400), ("grpo_k3/beta_2/seed_3", 200)])
def test_eval_settings_samples(name, samples):
    base = {"seed": 0, "eval": {"samples": 50, "backend": "hf"}, "temperature": 0.7}
    out = runs.eval_settings(base, FP, name)
    assert out["eval"] == {"samples": samples, "backend": "hf"} and base["eval"]["samples"] == 50


def test_table_paths():
    fp = {**FP, "max_steps": 160, "long_steps": 240}
    paths = runs.table_paths("fp", fp, ["grpo_k3/beta_2/seed_0", "grpo_k3_long/beta_2/seed_0"])
    assert paths == {
        "ref": "fp/evaluate/ref/pool/step_0.csv",
        **{
            f"grpo_k3/beta_2/seed_0@{s}": f"fp/evaluate/grpo_k3/beta_2/seed_0/pool/step_{s}.csv"
            for s in (80, 160)
        },
        **{
            f"grpo_k3_long/beta_2/seed_0@{s}": (
                f"fp/evaluate/grpo_k3_long/beta_2/seed_0/pool/step_{s}.csv"
            )
            for s in (80, 160, 240)
        },
    }
