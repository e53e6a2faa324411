"""GRPO training stage: the variant-to-TRL mapping, the paper's advantage (eq. 4), the batch
arithmetic, and a short real GRPOTrainer run on a tiny locally built model."""

import json

import pytest
import torch

from grpo_repro import config as cfg
from grpo_repro.train.args import grpo_args, per_device_batch
from grpo_repro.train.checkpoints import complete_trl_checkpoint
from grpo_repro.train.grpo import paper_advantage
from grpo_repro.train.schedule import checkpoint_steps, total_steps
from grpo_repro.train.variants import trl_settings
from tests.helpers import ROOT

MAPPING = [  # variant, advantage -> loss_type, scale_rewards, sync_ref_model, paper rescale
    ("grpo", "trl", "grpo", "group", False, False),
    ("grpo", "paper", "grpo", "none", False, True),
    ("mirror", "trl", "grpo", "group", True, False),
    ("mirror", "paper", "grpo", "none", True, True),
    ("dr_grpo", "trl", "dr_grpo", "none", False, False),
    ("dr_grpo", "paper", "dr_grpo", "none", False, False),
    ("mirror_dr", "paper", "dr_grpo", "none", True, False),
]


@pytest.mark.parametrize("variant,adv,loss,scale,sync,paper", MAPPING)
def test_variant_mapping(variant, adv, loss, scale, sync, paper):
    s = trl_settings(variant, adv)
    assert (s["loss_type"], s["scale_rewards"], s["sync_ref_model"], s["paper_advantage"]) == (
        loss,
        scale,
        sync,
        paper,
    )
    if sync:
        assert s["ref_model_mixup_alpha"] == 1.0 and s["ref_model_sync_steps"] == 1


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
    with pytest.raises(ValueError, match="whole groups"):
        per_device_batch({**paper["train"], "prompts_per_step": 27}, 7)


def test_every_hyperparameter_explicit(default_config, tmp_path):
    kwargs, extra = grpo_args(default_config, "grpo", tmp_path, 10)
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


def test_multi_process_checkpoint_accepted(tmp_path):
    """With several processes transformers writes rng_state_<rank>.pth instead of rng_state.pth."""
    ck = tmp_path / "checkpoint-150"
    ck.mkdir()
    for f in (
        "trainer_state.json",
        "optimizer.pt",
        "scheduler.pt",
        "model.safetensors",
        "rng_state_0.pth",
        "rng_state_1.pth",
    ):
        (ck / f).write_text("x")
    assert complete_trl_checkpoint(tmp_path) == str(ck)


def test_config_change_drops_resumable_state(tmp_path):
    from grpo_repro.train.checkpoints import reset_if_config_changed

    (tmp_path / "work" / "checkpoint-2").mkdir(parents=True)
    (tmp_path / "checkpoints" / "step_2").mkdir(parents=True)
    reset_if_config_changed(tmp_path, "config A")  # no stamp yet: start clean
    assert not (tmp_path / "checkpoints" / "step_2").exists()
    (tmp_path / "work" / "checkpoint-2").mkdir()
    reset_if_config_changed(tmp_path, "config A")  # same configuration: resume
    assert (tmp_path / "work" / "checkpoint-2").exists()
    reset_if_config_changed(tmp_path, "config B")  # changed: start over
    assert not (tmp_path / "work" / "checkpoint-2").exists()


def test_incomplete_trl_checkpoint_skipped(tmp_path):
    good, bad = tmp_path / "checkpoint-2", tmp_path / "checkpoint-4"
    for d in (good, bad):
        d.mkdir()
        (d / "model.safetensors").write_bytes(b"x")
    for f in ("trainer_state.json", "optimizer.pt", "scheduler.pt", "rng_state.pth"):
        (good / f).write_text("{}")
    (bad / "trainer_state.json").write_text("{}")
    assert complete_trl_checkpoint(tmp_path) == str(good)


def test_short_grpo_run(tiny_policy, default_config, tmp_path):
    """A real GRPOTrainer run: rewards are logged, parameters change, checkpoints are written."""
    from safetensors.torch import load_file

    from grpo_repro.train.grpo import train

    ref, records = tiny_policy
    config = json.loads(json.dumps(default_config))
    config["train"].update(
        max_steps=4,
        save_steps=2,
        prompts_per_step=2,
        num_generations=4,
        max_completion_length=8,
        learning_rate=1e-2,
        num_iterations=2,
    )

    def long_answer(
        completions, **kw
    ):  # a random tiny model never answers right: a pseudo-random reward
        return [float(len(c) % 2 == 0) for c in completions]

    summary = train(
        config, "grpo", str(ref), records, tmp_path / "run", [0, 2, 4], reward_fn=long_answer
    )
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
    "variant,save_steps,stop_at",
    [
        ("grpo", 2, 3),  # resumed mid-epoch (4 prompts, 2 per step, mu 2: 4 steps per epoch)
        ("grpo", 4, 5),  # resumed at an epoch boundary (TRL's sampler alone would replay epoch 0)
        ("mirror", 2, 3),  # mirror: the anchor (previous policy) must be restored on resume
        ("mirror", 4, 5),
    ],
)
def test_resume_is_exact(tiny_policy, default_config, tmp_path, variant, save_steps, stop_at):
    """A run interrupted after a TRL checkpoint and resumed ends with the same weights as an
    uninterrupted run."""
    from safetensors.torch import load_file
    from transformers import TrainerCallback

    from grpo_repro.train.grpo import train

    class StopAt(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            if state.global_step == stop_at:
                raise Interrupt

    ref, records = tiny_policy
    config = json.loads(json.dumps(default_config))
    config["train"].update(
        max_steps=8,
        save_steps=save_steps,
        prompts_per_step=2,
        num_generations=4,
        max_completion_length=8,
        learning_rate=1e-2,
        num_iterations=2,
    )
    steps = list(range(0, 9, save_steps))

    def reward(completions, **kw):
        return [float(len(c) % 2 == 0) for c in completions]

    def run(out, callbacks=()):
        return train(
            config, variant, str(ref), records, out, steps, reward_fn=reward, callbacks=callbacks
        )

    run(tmp_path / "straight")
    with pytest.raises(Interrupt):
        run(tmp_path / "cut", [StopAt()])
    assert not (tmp_path / "cut" / "checkpoints" / "step_8").exists()
    summary = run(tmp_path / "cut")
    assert summary["resumed_from"].endswith(f"checkpoint-{stop_at - 1}")
    a = load_file(tmp_path / "straight" / "checkpoints" / "step_8" / "model.safetensors")
    b = load_file(tmp_path / "cut" / "checkpoints" / "step_8" / "model.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)
