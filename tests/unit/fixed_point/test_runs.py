"""Run names, studies and settings of the fixed-point stage (grpo_repro.fixed_point.runs)."""

import pytest

from grpo_repro.fixed_point import runs
from grpo_repro.runs import constraint

FP = {
    "betas": [2.0, 5.0],
    "runs": ["grpo/k3_ratio", "dr_grpo/k3_ratio"],
    "seeds": [3, 4],
    "sweep_beta": 2.0,
    "group_sizes": [4, 16],
    "runs_first_seed": ["mirror/k3"],
    "factors": {"mu1": {"num_iterations": 1}, "lr_half": {"learning_rate": 5e-5}},
    "learning_rate": 1e-4,
    "prompts_per_step": 8,
    "max_steps": 480,
    "save_steps": 80,
    "long_steps": None,
    "ref_samples": 400,
    "samples": 200,
}


def _by_name(fp=FP, g=8, alpha=0.5):
    return runs.table(fp, g, alpha)


def test_the_table_names_every_run_once_and_holds_its_record():
    table = _by_name({**FP, "runs_sweep": ["two_kl/k3_ratio"], "long_steps": 960})
    assert table["grpo_k3_ratio/beta_2/seed_3"] == runs.Run("grpo", "k3_ratio", "", 2.0, 3, 8)
    assert table["grpo_k3_ratio_G16/beta_2/seed_4"].group_size == 16
    assert table["dr_grpo_k3_ratio_long/beta_2/seed_3"].long
    assert table["mirror_k3/beta_5/seed_3"].alpha is None
    two_kl = table["two_kl_k3_ratio/beta_2/seed_4"]  # at sweep_beta, every seed, its alpha
    assert (two_kl.variant, two_kl.alpha) == ("two_kl", 0.5)
    assert [n for n in table if n.startswith("two_kl")] == [
        "two_kl_k3_ratio/beta_2/seed_3",
        "two_kl_k3_ratio/beta_2/seed_4",
    ]
    assert all(name == run.name for name, run in table.items())


def test_a_two_kl_kind_without_alpha_is_refused():
    with pytest.raises(ValueError, match="two_kl/k3_ratio: a two-KL run needs alpha"):
        runs.table({**FP, "runs_sweep": ["two_kl/k3_ratio"]}, 8)


def test_the_wildcard_matches_the_table_names_only():
    import re

    table = _by_name()
    pattern = re.compile(rf"^(?:{constraint(table)})$")
    assert all(pattern.match(n) for n in table)
    for other in (
        "grpo_k3_ratio/beta_3/seed_3",
        "grpo_k3_ratio/beta_2/seed_9",
        "ppo_k3/beta_2/seed_3",
    ):
        assert not pattern.match(other)


def test_studies():
    main = [r.name for r in runs.study_runs(FP, "main", 8)]
    assert len(main) == 2 * 2 * 2 and "dr_grpo_k3_ratio/beta_5/seed_4" in main
    groups = [r.name for r in runs.study_runs(FP, "groups", 8)]
    assert groups == [
        f"grpo_k3_ratio{s}/beta_2/seed_{seed}" for s in ("_G4", "", "_G16") for seed in (3, 4)
    ]
    assert [r.group_size for r in runs.study_runs(FP, "groups", 8)][::2] == [4, 8, 16]
    factors = [r.name for r in runs.study_runs(FP, "factors", 8)]
    assert factors == [
        "mirror_k3/beta_2/seed_3",
        "mirror_k3/beta_5/seed_3",
        "grpo_k3_ratio/beta_2/seed_3",
        "grpo_k3_ratio_mu1/beta_2/seed_3",
        "grpo_k3_ratio_lr_half/beta_2/seed_3",
        "dr_grpo_k3_ratio/beta_2/seed_3",  # every base run at sweep_beta (main's, not retrained)
    ]
    every = list(runs.table(FP, 8))
    assert len(every) == len(set(every)) == 8 + 4 + 4  # shared base runs trained once
    long = runs.study_runs({**FP, "long_steps": 960}, "factors", 8)
    assert sorted({r.name for r in long} - set(factors)) == [
        "dr_grpo_k3_ratio_long/beta_2/seed_3",
        "grpo_k3_ratio_long/beta_2/seed_3",
    ]
    assert len(runs.table({**FP, "long_steps": 960}, 8)) == 16 + 2  # dr_grpo base: main's
    with pytest.raises(ValueError, match="unknown study"):
        runs.study_runs(FP, "nope", 8)


def test_train_overrides_change_only_the_sweep_keys(default_config):
    from grpo_repro.train.run_settings import grpo_run

    table = _by_name({**FP, "runs_sweep": ["two_kl/k3_ratio"], "long_steps": 960})
    out = runs.train_overrides(FP, table["grpo_k3_ratio/beta_2/seed_3"])
    assert out == {
        "beta": 2.0,
        "kl_estimator": "k3_ratio",
        "learning_rate": 1e-4,
        "max_steps": 480,
        "save_steps": 80,
        "on_pool": True,
        "num_generations": 8,
        "prompts_per_step": 8,  # the study's, not the default runs' 4
    }
    null = runs.train_overrides(
        {**FP, "prompts_per_step": None}, table["grpo_k3_ratio/beta_2/seed_3"]
    )
    assert "prompts_per_step" not in null  # null: train.prompts_per_step
    g16 = runs.train_overrides(FP, table["grpo_k3_ratio_G16/beta_2/seed_3"])
    assert g16 == {**out, "num_generations": 16}
    lr = runs.train_overrides(FP, table["grpo_k3_ratio_lr_half/beta_2/seed_3"])
    assert lr == {**out, "learning_rate": 5e-5}
    long = runs.train_overrides(
        {**FP, "long_steps": 960}, table["grpo_k3_ratio_long/beta_2/seed_3"]
    )
    assert long == {**out, "max_steps": 960}
    two_kl = runs.train_overrides(FP, table["two_kl_k3_ratio/beta_2/seed_3"])
    assert two_kl == {**out, "two_kl_alpha": 0.5}  # only two-KL runs get it
    # through grpo_run: the run's GRPO seed and data seed, every other key the default runs'
    base = grpo_run(default_config, "grpo", 3)
    run = grpo_run(default_config, "grpo", 3, train_overrides=out)
    assert run.params() == {**base.params(), "train": {**base.params()["train"], **out}}
    assert run.seed == 3 and run.data_seed == default_config["seed"]
    assert "seeds" not in run.params()["train"] and "two_kl_alpha" not in run.params()["train"]
    assert (
        grpo_run(default_config, "two_kl", 3, train_overrides=two_kl).train["two_kl_alpha"] == 0.5
    )
    with pytest.raises(ValueError, match="seeds"):
        grpo_run(default_config, "grpo", 3, train_overrides={"seeds": [3]})


def test_tabular_variants_leave_out_mirror_and_two_kl():
    fp = {"runs": ["grpo/k3_ratio", "mirror/k3_ratio", "two_kl/k3", "grpo/k3", "dr_grpo/k3_ratio"]}
    assert runs.tabular_variants(fp) == ["grpo", "dr_grpo"]


def test_steps_of_base_and_long_runs():
    fp = {**FP, "long_steps": 960}
    table = _by_name(fp)
    assert runs.steps(fp, table["grpo_k3_ratio/beta_2/seed_3"]) == [80, 160, 240, 320, 400, 480]
    assert runs.steps(fp, table["dr_grpo_k3_ratio_long/beta_2/seed_3"])[-3:] == [800, 880, 960]
    assert len(runs.steps(fp, table["grpo_k3_ratio_lr_half/beta_2/seed_3"])) == 6


COMPACT = {
    "run": "grpo/k3_ratio",
    "beta": 3.0,
    "seeds": [0],
    "max_steps": 160,
    "save_steps": 40,
    "samples": 100,
}


@pytest.mark.parametrize(
    "name, samples",
    [("ref", 400), ("grpo_k3/beta_2/seed_3", 200), ("grpo_k3_ratio_compact/beta_3/seed_0", 100)],
)
def test_eval_settings_samples(name, samples):
    base = {"seed": 0, "eval": {"samples": 50, "backend": "hf"}, "temperature": 0.7}
    fp = {**FP, "runs_first_seed": ["grpo/k3"], "compact": COMPACT}
    out = runs.eval_settings(base, fp, name if name == "ref" else _by_name(fp)[name])
    assert out["eval"] == {"samples": samples, "backend": "hf"} and base["eval"]["samples"] == 50


def test_the_compact_study_is_its_own_runs_steps_and_samples():
    fp = {**FP, "compact": COMPACT}
    assert runs.studies(fp) == ["main", "groups", "factors", "compact"]
    assert runs.studies({**fp, "compact": None}) == ["main", "groups", "factors"]
    (run,) = runs.study_runs(fp, "compact", 8)
    assert run.name == "grpo_k3_ratio_compact/beta_3/seed_0" and run.compact and not run.long
    assert _by_name(fp)[run.name] == run  # in the one table of runs
    assert runs.steps(fp, run) == [40, 80, 120, 160]
    over = runs.train_overrides(fp, run)
    assert (over["max_steps"], over["save_steps"], over["beta"]) == (160, 40, 3.0)
    assert over["on_pool"] and over["prompts_per_step"] == 8  # the stage's, shared
    assert runs.study_runs({**fp, "compact": None}, "compact", 8) == []


def test_compare_inputs():
    fp = {**FP, "max_steps": 160, "long_steps": 240}
    table = _by_name(fp)
    picked = [table["mirror_k3/beta_2/seed_3"], table["grpo_k3_ratio_long/beta_2/seed_3"]]
    paths = runs.compare_inputs(fp, "fp", picked)
    assert paths == {
        "ref": "fp/evaluate/ref/pool/step_0.csv",
        **{
            f"mirror_k3/beta_2/seed_3@{s}": f"fp/evaluate/mirror_k3/beta_2/seed_3/pool/step_{s}.csv"
            for s in (80, 160)
        },
        **{
            f"grpo_k3_ratio_long/beta_2/seed_3@{s}": (
                f"fp/evaluate/grpo_k3_ratio_long/beta_2/seed_3/pool/step_{s}.csv"
            )
            for s in (80, 160, 240)
        },
        "kl@mirror_k3/beta_2/seed_3": "fp/kl/mirror_k3/beta_2/seed_3.csv",
        "kl@grpo_k3_ratio_long/beta_2/seed_3": "fp/kl/grpo_k3_ratio_long/beta_2/seed_3.csv",
    }
