"""GRPO training with TRL's GRPOTrainer (Sec. 2 objective, Sec. 6 experiment), every hyperparameter
explicit (TRL's defaults drifted from the paper: beta=0, loss_type=dapo).

PaperGRPOTrainer adds the paper's smoothed whitened advantage, eq. (4):
    A = (r - p) / sqrt(p (1 - p) + eps),
built exactly from TRL's mean-only advantage A0 = r - p_hat: for binary rewards the group mean of
A0^2 is p_hat (1 - p_hat), so A = A0 / sqrt(mean_group(A0^2) + eps).

Checkpoints: the policy at every `save_steps` optimizer steps is written to
checkpoints/step_N (atomic rename); TRL's own resumable checkpoints live in work/ and an
interrupted run resumes from the newest complete one.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path

from grpo_repro import atomic_io
from grpo_repro.variants import trl_settings

TRL_CHECKPOINT_FILES = ("trainer_state.json", "optimizer.pt", "scheduler.pt")  # + rng_state[_rank].pth


def paper_advantage(adv0, group_size: int, eps: float):
    """Eq. (4) from mean-only advantages A0 = r - p_hat laid out in contiguous groups."""
    import torch

    groups = adv0.view(-1, group_size)
    var = (groups ** 2).mean(dim=1, keepdim=True)  # = p_hat (1 - p_hat) for binary rewards
    return (groups / torch.sqrt(var + eps)).reshape(adv0.shape)


def make_trainer_class():
    from trl import GRPOTrainer
    from trl.trainer.utils import RepeatSampler

    class EpochSeededRepeatSampler(RepeatSampler):
        """TRL's RepeatSampler draws each epoch's order from one generator seeded once, so a run
        resumed at an epoch boundary replays epoch 0's order. Here epoch e's order depends only on
        (seed, e), set by the Trainer's set_epoch(e): a resumed run sees the same order."""

        epoch = 0

        def set_epoch(self, epoch: int) -> None:
            self.epoch = int(epoch)

        def __iter__(self):
            if self.shuffle:
                self.generator.manual_seed((self.seed or 0) * 1_000_003 + self.epoch)
            return super().__iter__()

    class PaperGRPOTrainer(GRPOTrainer):
        """GRPOTrainer with the paper's eq. (4) advantage when `paper_eps` is set (else TRL's)."""

        paper_eps: float | None = None

        def _get_train_sampler(self, dataset=None):
            base = super()._get_train_sampler(dataset)
            return EpochSeededRepeatSampler(base.data_source, base.mini_repeat_count, base.batch_size,
                                            base.repeat_count, base.shuffle, base.seed)

        def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
            """Mirror variants: the anchor is the policy of the last step, which TRL does not
            checkpoint; after a resume it would be pi_ref. Restore it from the resumed policy."""
            super()._load_from_checkpoint(resume_from_checkpoint, model)
            if self.args.sync_ref_model and self.ref_model is not None:
                policy = self.accelerator.unwrap_model(self.model)
                self.ref_model.load_state_dict(policy.state_dict())

        def _generate_and_score_completions(self, inputs):
            out = super()._generate_and_score_completions(inputs)
            if self.paper_eps is not None and self.model.training:
                out["advantages"] = paper_advantage(out["advantages"], self.num_generations, self.paper_eps)
            return out

    return PaperGRPOTrainer


def per_device_batch(train: dict, devices: int) -> int:
    """Completions per device per micro-step: prompts_per_step * G / (grad_accum * devices)."""
    total = train["prompts_per_step"] * train["num_generations"]
    per = total // (train["grad_accum"] * devices)
    if per * train["grad_accum"] * devices != total or per % train["num_generations"]:
        raise ValueError(
            "train.prompts_per_step * train.num_generations must split into whole groups per device and "
            f"micro-step: {train['prompts_per_step']} x {train['num_generations']} over "
            f"{train['grad_accum']} accumulation steps x {devices} devices")
    return per


def grpo_args(config: dict, variant: str, work_dir: str | Path, total_steps: int, devices: int = 1,
              use_cpu: bool = True) -> tuple[dict, dict]:
    """(GRPOConfig kwargs, extra settings) with every hyperparameter explicit."""
    train = config["train"]
    settings = trl_settings(variant, train["advantage"])
    kwargs = dict(
        output_dir=str(work_dir),
        # optimisation
        learning_rate=train["learning_rate"], lr_scheduler_type=train["lr_schedule"], warmup_steps=0,
        weight_decay=0.0, adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8, max_grad_norm=1.0,
        max_steps=total_steps, num_train_epochs=1,
        per_device_train_batch_size=per_device_batch(train, devices),
        gradient_accumulation_steps=train["grad_accum"], steps_per_generation=train["grad_accum"],
        # the paper's objective (Sec. 2)
        beta=train["beta"], epsilon=train["clip_eps"], epsilon_high=train["clip_eps"],
        num_iterations=train["num_iterations"], num_generations=train["num_generations"],
        loss_type=settings["loss_type"], scale_rewards=settings["scale_rewards"],
        sync_ref_model=settings["sync_ref_model"], ref_model_mixup_alpha=settings["ref_model_mixup_alpha"],
        ref_model_sync_steps=settings["ref_model_sync_steps"], importance_sampling_level="token",
        mask_truncated_completions=False, disable_dropout=True, top_entropy_quantile=1.0,
        multi_objective_aggregation="sum_then_normalize",
        # generation
        max_completion_length=train["max_completion_length"], temperature=train["temperature"],
        top_p=1.0, top_k=0, repetition_penalty=1.0, use_vllm=train["use_vllm"],
        vllm_mode="colocate",  # vLLM inside the training processes (no separate server to start)
        # bookkeeping
        seed=config["seed"], data_seed=config["seed"], shuffle_dataset=True,
        logging_steps=1, save_strategy="steps", save_steps=train["save_steps"], save_total_limit=1,
        report_to=[], disable_tqdm=False, log_completions=False,
        use_cpu=use_cpu, bf16=train["bf16"], gradient_checkpointing=False, dataloader_num_workers=0,
    )
    extra = {"variant": variant, "advantage": train["advantage"], "paper_advantage": settings["paper_advantage"],
             "smoothing_eps": train["smoothing_eps"] if settings["paper_advantage"] else None,
             "devices": devices}
    return kwargs, extra


def complete_trl_checkpoint(work_dir: str | Path) -> str | None:
    """Newest TRL checkpoint in work_dir with all its files (a half-written one is skipped)."""
    cands = sorted(Path(work_dir).glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    for cand in reversed(cands):
        if (all((cand / f).exists() for f in TRL_CHECKPOINT_FILES) and any(cand.glob("*.safetensors"))
                and any(cand.glob("rng_state*.pth"))):  # rng_state.pth, or rng_state_<rank>.pth per process
            return str(cand)
    return None


def reset_if_config_changed(out_dir: Path, fingerprint: str) -> None:
    """Resume only state written under the same configuration: when the fingerprint stored in
    work/ differs (or is absent), drop work/ and checkpoints/ and start from pi_ref."""
    import hashlib

    stamp = out_dir / "work" / "config.sha256"
    digest = hashlib.sha256(fingerprint.encode()).hexdigest()
    if not stamp.exists() or stamp.read_text().strip() != digest:
        for sub in ("work", "checkpoints"):
            shutil.rmtree(out_dir / sub, ignore_errors=True)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(digest + "\n")


def save_policy(model, tokenizer, dest: Path, marker: dict | None = None) -> None:
    """Save model + tokenizer to dest atomically (temp dir, then rename)."""
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    if marker is not None:
        (tmp / "organism.json").write_text(json.dumps(marker))
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)


def make_checkpoint_callback(ckpt_dir: Path, steps: set[int], tokenizer, marker: dict | None):
    from transformers import TrainerCallback

    class SavePolicy(TrainerCallback):
        """Writes the policy at the configured steps to checkpoints/step_N (evaluation's inputs)."""

        def on_step_end(self, args, state, control, model=None, **kw):
            if state.global_step in steps and state.is_world_process_zero:
                dest = ckpt_dir / f"step_{state.global_step}"
                if not dest.exists():
                    save_policy(model, tokenizer, dest, marker)

    return SavePolicy()


def write_log(history: list[dict], path: Path) -> None:
    """Training log as CSV: one row per logged step (reward, KL, loss, clip ratio, ...)."""
    rows = [r for r in history if "step" in r]
    keys = sorted({k for r in rows for k in r})
    front = [k for k in ("step", "reward", "kl", "loss", "clip_ratio/region_mean") if k in keys]
    keys = front + [k for k in keys if k not in front]
    with atomic_io.atomic_path(path) as tmp, open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)


def train(config: dict, variant: str, ref_path: str, records: list[dict], out_dir: str | Path,
          steps: list[int], devices: int = 1, use_cpu: bool = True, reward_fn=None,
          callbacks=()) -> dict:
    """Run GRPO for `variant` from pi_ref on `records` (prompt, gold). Returns the run summary.
    reward_fn: TRL reward function; default the answer checker in mode data.answer_mode.
    callbacks: extra transformers TrainerCallbacks (tests use one to interrupt a run)."""
    from datasets import Dataset

    from grpo_repro.models import load_policy
    from grpo_repro.reward import make_reward_fn

    out_dir = Path(out_dir)
    work_dir, ckpt_dir = out_dir / "work", out_dir / "checkpoints"
    from accelerate import PartialState

    state = PartialState(cpu=use_cpu)
    if state.is_main_process:
        reset_if_config_changed(out_dir, json.dumps(
            {"variant": variant, "ref": str(ref_path), "steps": steps, "seed": config["seed"],
             "train": config["train"], "answer_mode": config["data"]["answer_mode"],
             "prompts": [[r["prompt"], r["gold"]] for r in records]}, sort_keys=True))
        ckpt_dir.mkdir(parents=True, exist_ok=True)
    state.wait_for_everyone()  # every process sees the same work/ before choosing where to resume
    model, tokenizer = load_policy(ref_path)  # float32 master weights; train.bf16 = bf16 autocast
    model.train()
    marker = json.loads((Path(ref_path) / "organism.json").read_text()) if (Path(ref_path) / "organism.json").exists() else None
    kwargs, extra = grpo_args(config, variant, work_dir, steps[-1], devices, use_cpu)
    from trl import GRPOConfig

    args = GRPOConfig(**kwargs)
    data = Dataset.from_dict({"prompt": [r["prompt"] for r in records], "gold": [r["gold"] for r in records]})
    reward_fn = reward_fn or make_reward_fn(config["data"]["answer_mode"])
    trainer_cls = make_trainer_class()
    trainer = trainer_cls(model=model, args=args, train_dataset=data, reward_funcs=[reward_fn],
                          processing_class=tokenizer,
                          callbacks=[make_checkpoint_callback(ckpt_dir, set(steps[1:]), tokenizer, marker),
                                     *callbacks])
    trainer.paper_eps = extra["smoothing_eps"]
    resume = complete_trl_checkpoint(work_dir)
    trainer.train(resume_from_checkpoint=resume)
    trainer.accelerator.wait_for_everyone()
    final = ckpt_dir / f"step_{steps[-1]}"
    if trainer.is_world_process_zero():
        if not final.exists():
            save_policy(trainer.accelerator.unwrap_model(trainer.model), tokenizer, final, marker)
        write_log(trainer.state.log_history, out_dir / "train_log.csv")
    trainer.accelerator.wait_for_everyone()
    missing = [s for s in steps[1:] if not (ckpt_dir / f"step_{s}").exists()]
    if missing:
        raise RuntimeError(f"training finished without checkpoints for steps {missing}")
    return {"trl_args": {k: v for k, v in kwargs.items()}, **extra, "resumed_from": resume,
            "steps": steps, "global_step": trainer.state.global_step}
