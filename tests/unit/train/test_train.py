"""GRPO training stage: the variant-to-TRL mapping, the paper's advantage (eq. 4), the batch
arithmetic, and a short real GRPOTrainer run on a tiny locally built model."""

import json

import pytest
import torch

from grpo_repro import config as cfg
from grpo_repro.train.args import grpo_args, per_device_batch
from grpo_repro.train.checkpoints import complete_trl_checkpoint
from grpo_repro.train.run_settings import checkpoint_steps, grpo_run, total_steps
from grpo_repro.train.trl_variant import paper_advantage, trl_settings
from tests.helpers import ROOT

MAPPING = [  # variant, advantage -> scale_rewards, sync_ref_model, paper rescale
    ("grpo", "trl", "group", False, False),
    ("grpo", "paper", "none", False, True),
    ("mirror", "trl", "group", True, False),
    ("mirror", "paper", "none", True, True),
    ("dr_grpo", "trl", "none", False, False),
    ("dr_grpo", "paper", "none", False, False),
    ("mirror_dr", "paper", "none", True, False),
]


@pytest.mark.parametrize("variant,adv,scale,sync,paper", MAPPING)
def test_variant_mapping(variant, adv, scale, sync, paper):
    s = trl_settings(variant, adv)
    assert (s["scale_rewards"], s["sync_ref_model"], s["paper_advantage"]) == (scale, sync, paper)
    assert "loss_type" not in s  # a variant changes the advantage and the anchor only (Sec. 3-5)
    if sync:
        assert s["ref_model_mixup_alpha"] == 1.0 and s["ref_model_sync_steps"] == 1


@pytest.mark.parametrize("variant", ["grpo", "mirror", "dr_grpo", "mirror_dr"])
def test_loss_aggregation_is_the_config_key_for_every_variant(default_config, tmp_path, variant):
    """grpo vs dr_grpo isolates the advantage: the token aggregation is train.loss_type for all."""
    kwargs, _ = grpo_args(grpo_run(default_config, variant, 0), tmp_path, 10)
    assert kwargs["loss_type"] == default_config["train"]["loss_type"] == "grpo"
    other = {**default_config, "train": {**default_config["train"], "loss_type": "dr_grpo"}}
    assert grpo_args(grpo_run(other, variant, 0), tmp_path, 10)[0]["loss_type"] == "dr_grpo"


@pytest.mark.parametrize("estimator,corrected", [("k3", False), ("k3_ratio", True)])
def test_kl_estimator_key(default_config, tmp_path, estimator, corrected):
    config = {**default_config, "train": {**default_config["train"], "kl_estimator": estimator}}
    kwargs, extra = grpo_args(grpo_run(config, "grpo", 0), tmp_path, 10)
    assert kwargs["use_bias_correction_kl"] is corrected and extra["kl_estimator"] == estimator


def test_grpo_seed_is_the_run_seed(default_config, tmp_path):
    kwargs, _ = grpo_args(grpo_run(default_config, "grpo", 7), tmp_path, 10)
    assert kwargs["seed"] == kwargs["data_seed"] == 7 != default_config["seed"]


def test_unknown_variant_named():
    with pytest.raises(ValueError, match="unknown variant 'ppo'"):
        trl_settings("ppo", "paper")


@pytest.mark.parametrize("successes,G", [(1, 8), (3, 8), (7, 8), (5, 16), (0, 4), (4, 4)])
def test_paper_advantage_is_eq4(successes, G):
    """From TRL's A0 = r - p_hat, the rescale gives (r - p)/sqrt(p(1-p)+eps) exactly."""
    eps = 1e-5
    r = torch.tensor([1.0] * successes + [0.0] * (G - successes), dtype=torch.float64)
    p = successes / G
    out = paper_advantage((r - p).repeat(3), G, eps)
    expect = ((r - p) / (p * (1 - p) + eps) ** 0.5).repeat(3)
    assert torch.allclose(out, expect, rtol=1e-12, atol=1e-12)


def test_batch_arithmetic_and_schedule():
    paper = cfg.load(ROOT / "config" / "paper.yaml")
    assert (
        per_device_batch(paper["train"], 7) == 16
    )  # the paper: one prompt x 16 completions per GPU
    assert total_steps(paper["train"], 7473) == 266 * 10  # TRL drops the incomplete last batch
    steps = checkpoint_steps(paper["train"], 7473)
    assert steps[:3] == [0, 150, 300] and steps[-2:] == [2550, 2660]
    with pytest.raises(ValueError, match="prompts_per_step"):
        total_steps(paper["train"], 20)


def test_every_hyperparameter_explicit(default_config, tmp_path):
    kwargs, extra = grpo_args(grpo_run(default_config, "grpo", 0), tmp_path, 10)
    for key in (
        "beta",
        "loss_type",
        "scale_rewards",
        "epsilon",
        "num_iterations",
        "num_generations",
        "learning_rate",
        "temperature",
        "max_completion_length",
        "use_cpu",
        "bf16",
    ):
        assert key in kwargs
    assert kwargs["beta"] == default_config["train"]["beta"] > 0
    assert extra["paper_advantage"] is True


def _checkpoint(root, step, rng=("rng_state.pth",)):
    """A TRL checkpoint-<step> with rank 0's files and whole RNG archives `rng`."""
    ck = root / f"checkpoint-{step}"
    ck.mkdir()
    for f in ("trainer_state.json", "optimizer.pt", "scheduler.pt", "model.safetensors"):
        (ck / f).write_text("{}")
    for f in rng:
        torch.save({"cpu": torch.get_rng_state()}, ck / f)
    return ck


def test_multi_process_checkpoint_needs_every_rank_rng_file(tmp_path):
    """With several processes every rank writes its own rng_state_<rank>.pth, unsynchronised with rank
    0's trainer_state.json: a checkpoint lacking one rank's file, or holding one cut mid-write, is
    skipped (that rank would resume with fresh RNG state and part from the uninterrupted run)."""
    two = ("rng_state_0.pth", "rng_state_1.pth")
    good = _checkpoint(tmp_path, 4, two)
    assert complete_trl_checkpoint(tmp_path, processes=2) == str(good)
    assert complete_trl_checkpoint(tmp_path, processes=1) is None  # rng_state.pth absent
    _checkpoint(tmp_path, 8, two[:1])  # killed before rank 1 saved its RNG state
    assert complete_trl_checkpoint(tmp_path, processes=2) == str(good)
    cut = _checkpoint(tmp_path, 12, two)
    data = (cut / "rng_state_1.pth").read_bytes()
    (cut / "rng_state_1.pth").write_bytes(data[: len(data) // 2])  # killed mid-write
    assert complete_trl_checkpoint(tmp_path, processes=2) == str(good)
    (cut / "rng_state_1.pth").write_bytes(data)
    assert complete_trl_checkpoint(tmp_path, processes=2) == str(cut)


def test_fingerprint_change_drops_resumable_state(tmp_path):
    from grpo_repro.train.checkpoints import drop_checkpoints_after, reset_if_changed

    (tmp_path / "work" / "checkpoint-2").mkdir(parents=True)
    (tmp_path / "checkpoints" / "step_2").mkdir(parents=True)
    reset_if_changed(tmp_path, {"a": 1})  # no stamp yet: start clean
    assert not (tmp_path / "checkpoints" / "step_2").exists()
    (tmp_path / "work" / "checkpoint-2").mkdir()
    reset_if_changed(tmp_path, {"a": 1})  # same fingerprint: resume
    assert (tmp_path / "work" / "checkpoint-2").exists()
    reset_if_changed(tmp_path, {"a": 2})  # changed: start over
    assert not (tmp_path / "work" / "checkpoint-2").exists()
    for n in (2, 4, 6):
        (tmp_path / "checkpoints" / f"step_{n}").mkdir(parents=True)
    drop_checkpoints_after(tmp_path / "checkpoints", 4)  # resumed from TRL's checkpoint-4
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["step_2", "step_4"]


def test_incomplete_trl_checkpoint_skipped(tmp_path):
    good = _checkpoint(tmp_path, 2)
    bad = tmp_path / "checkpoint-4"
    bad.mkdir()
    (bad / "model.safetensors").write_bytes(b"x")
    (bad / "trainer_state.json").write_text("{}")
    assert complete_trl_checkpoint(tmp_path) == str(good)


def _short_config(default_config, **train):
    """The default config with a tiny GRPO run (2 prompts x G 4 per step, 8 tokens, mu 2)."""
    config = json.loads(json.dumps(default_config))
    config["train"].update(
        max_steps=2,
        save_steps=2,
        prompts_per_step=2,
        num_generations=4,
        max_completion_length=8,
        learning_rate=1e-2,
        num_iterations=2,
    )
    config["train"].update(train)
    return config


def _parity(completions, **kw):
    """A random tiny model never answers right: a pseudo-random reward."""
    return [float(len(c) % 2 == 0) for c in completions]


def test_short_grpo_run(tiny_policy, default_config, tmp_path):
    """A real GRPOTrainer run: rewards are logged, parameters change, checkpoints are written."""
    from safetensors.torch import load_file

    from grpo_repro.train.grpo import train

    ref, records = tiny_policy
    config = _short_config(default_config, max_steps=4)
    run = grpo_run(config, "grpo", 0)
    summary = train(run, str(ref), records, tmp_path / "run", [0, 2, 4], reward_fn=_parity)
    assert summary["global_step"] == 4
    import pandas as pd

    log = pd.read_csv(tmp_path / "run" / "train_log.csv")
    assert {"reward", "kl", "loss"} <= set(log.columns) and log[
        "reward"
    ].notna().sum() >= 2  # logged at each generation (every mu steps)
    before = load_file(ref / "model.safetensors")
    after = load_file(tmp_path / "run" / "checkpoints" / "step_4" / "model.safetensors")
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert (tmp_path / "run" / "checkpoints" / "step_2" / "organism.json").exists()


class Interrupt(Exception):
    pass


@pytest.mark.parametrize(
    "variant,save_steps,stop_at,fast",
    [
        ("grpo", 2, 3, True),  # resumed mid-epoch (4 prompts, 2 per step, mu 2: 4 steps per epoch)
        ("grpo", 4, 5, False),  # at an epoch boundary (TRL's sampler alone would replay epoch 0)
        ("mirror", 2, 3, False),  # mirror: the anchor (previous policy) is restored on resume
        ("mirror", 4, 5, True),
    ],
)
def test_resume_is_exact(
    tiny_policy, default_config, tmp_path, capsys, variant, save_steps, stop_at, fast
):
    """A run interrupted after a TRL checkpoint and resumed ends with the same weights as an
    uninterrupted run; its log says where each start began."""
    from safetensors.torch import load_file
    from transformers import TrainerCallback

    from grpo_repro.train.grpo import train

    class StopAt(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            if state.global_step == stop_at:
                raise Interrupt

    ref, records = tiny_policy
    config = _short_config(default_config, max_steps=8, save_steps=save_steps, fast_step=fast)
    steps = list(range(0, 9, save_steps))

    def run(out, callbacks=()):
        return train(
            grpo_run(config, variant, 0),
            str(ref),
            records,
            out,
            steps,
            reward_fn=_parity,
            callbacks=callbacks,
        )

    run(tmp_path / "straight")
    with pytest.raises(Interrupt):
        run(tmp_path / "cut", [StopAt()])
    assert not (tmp_path / "cut" / "checkpoints" / "step_8").exists()
    assert "starting from pi_ref" in capsys.readouterr().out
    summary = run(tmp_path / "cut")
    assert summary["resumed_from"].endswith(f"checkpoint-{stop_at - 1}")
    out = capsys.readouterr().out
    assert f"resuming from {summary['resumed_from']} (step {stop_at - 1})" in out, out
    a = load_file(tmp_path / "straight" / "checkpoints" / "step_8" / "model.safetensors")
    b = load_file(tmp_path / "cut" / "checkpoints" / "step_8" / "model.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_rerun_never_trains_on_top_of_another_pi_ref(tiny_policy, default_config, tmp_path):
    """A rerun after pi_ref changed starts from the new pi_ref: nothing of the old run's TRL state
    or step_N folders survives (the fingerprint covers pi_ref's weights)."""
    import shutil

    from safetensors.torch import load_file, save_file

    from grpo_repro.train.grpo import train

    tiny, records = tiny_policy
    ref = tmp_path / "ref"  # pi_ref is retrained in place, at the same path (as the workflow does)
    shutil.copytree(tiny, ref)
    config = _short_config(default_config)
    out = tmp_path / "run"
    first = train(grpo_run(config, "grpo", 0), str(ref), records, out, [0, 2], reward_fn=_parity)
    old = load_file(out / "checkpoints" / "step_2" / "model.safetensors")
    weights = load_file(ref / "model.safetensors")
    save_file({k: v + 0.01 for k, v in weights.items()}, ref / "model.safetensors")
    second = train(grpo_run(config, "grpo", 0), str(ref), records, out, [0, 2], reward_fn=_parity)
    assert first["resumed_from"] is None and second["resumed_from"] is None
    assert second["global_step"] == 2
    new = load_file(out / "checkpoints" / "step_2" / "model.safetensors")
    assert any(not torch.equal(old[k], new[k]) for k in old)


def test_rerun_of_a_finished_run_takes_no_extra_step(tiny_policy, default_config, tmp_path):
    """The same run again resumes its finished TRL state and stops at max_steps (TRL alone would
    take one more optimizer step)."""
    from safetensors.torch import load_file

    from grpo_repro.train.grpo import train

    ref, records = tiny_policy
    config = _short_config(default_config)
    out = tmp_path / "run"
    train(grpo_run(config, "grpo", 0), str(ref), records, out, [0, 2], reward_fn=_parity)
    before = load_file(out / "checkpoints" / "step_2" / "model.safetensors")
    again = train(grpo_run(config, "grpo", 0), str(ref), records, out, [0, 2], reward_fn=_parity)
    assert again["resumed_from"].endswith("checkpoint-2") and again["global_step"] == 2
    after = load_file(out / "checkpoints" / "step_2" / "model.safetensors")
    assert all(torch.equal(before[k], after[k]) for k in before)
    import pandas as pd

    assert pd.read_csv(out / "train_log.csv")["step"].max() == 2
