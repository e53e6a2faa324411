"""GRPO training with TRL's GRPOTrainer (Sec. 2 objective, Sec. 6 experiment), every hyperparameter
explicit (TRL's defaults drifted from the paper: beta=0, loss_type=dapo).

PaperGRPOTrainer adds the paper's smoothed whitened advantage, eq. (4):
    A = (r - p) / sqrt(p (1 - p) + eps),
built exactly from TRL's mean-only advantage A0 = r - p_hat: for binary rewards the group mean of
A0^2 is p_hat (1 - p_hat), so A = A0 / sqrt(mean_group(A0^2) + eps).

Checkpoints and resume: grpo_repro.train.checkpoints; the GRPOConfig: grpo_repro.train.args.
"""

from __future__ import annotations

import json
from pathlib import Path

from grpo_repro.models import save_policy
from grpo_repro.train.args import grpo_args
from grpo_repro.train.checkpoints import (
    complete_trl_checkpoint,
    make_checkpoint_callback,
    reset_if_config_changed,
    write_log,
)


def paper_advantage(adv0, group_size: int, eps: float):
    """Eq. (4) from mean-only advantages A0 = r - p_hat laid out in contiguous groups."""
    import torch

    groups = adv0.view(-1, group_size)
    var = (groups**2).mean(dim=1, keepdim=True)  # = p_hat (1 - p_hat) for binary rewards
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
            return EpochSeededRepeatSampler(
                base.data_source,
                base.mini_repeat_count,
                base.batch_size,
                base.repeat_count,
                base.shuffle,
                base.seed,
            )

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
                out["advantages"] = paper_advantage(
                    out["advantages"], self.num_generations, self.paper_eps
                )
            return out

    return PaperGRPOTrainer


def train(
    config: dict,
    variant: str,
    ref_path: str,
    records: list[dict],
    out_dir: str | Path,
    steps: list[int],
    devices: int = 1,
    use_cpu: bool = True,
    reward_fn=None,
    callbacks=(),
) -> dict:
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
        reset_if_config_changed(
            out_dir,
            json.dumps(
                {
                    "variant": variant,
                    "ref": str(ref_path),
                    "steps": steps,
                    "seed": config["seed"],
                    "train": config["train"],
                    "answer_mode": config["data"]["answer_mode"],
                    "prompts": [[r["prompt"], r["gold"]] for r in records],
                },
                sort_keys=True,
            ),
        )
        ckpt_dir.mkdir(parents=True, exist_ok=True)
    state.wait_for_everyone()  # every process sees the same work/ before choosing where to resume
    model, tokenizer = load_policy(ref_path)  # float32 master weights; train.bf16 = bf16 autocast
    model.train()
    marker = (
        json.loads((Path(ref_path) / "organism.json").read_text())
        if (Path(ref_path) / "organism.json").exists()
        else None
    )
    kwargs, extra = grpo_args(config, variant, work_dir, steps[-1], devices, use_cpu)
    from trl import GRPOConfig

    args = GRPOConfig(**kwargs)
    data = Dataset.from_dict(
        {"prompt": [r["prompt"] for r in records], "gold": [r["gold"] for r in records]}
    )
    reward_fn = reward_fn or make_reward_fn(config["data"]["answer_mode"])
    trainer_cls = make_trainer_class()
    trainer = trainer_cls(
        model=model,
        args=args,
        train_dataset=data,
        reward_funcs=[reward_fn],
        processing_class=tokenizer,
        callbacks=[
            make_checkpoint_callback(ckpt_dir, set(steps[1:]), tokenizer, marker),
            *callbacks,
        ],
    )
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
    return {
        "trl_args": {k: v for k, v in kwargs.items()},
        **extra,
        "resumed_from": resume,
        "steps": steps,
        "global_step": trainer.state.global_step,
    }


def run(
    config: dict,
    variant: str,
    ref: str,
    prompts_path: str,
    n_epoch_prompts: int,
    out_dir: str,
    run_json: str,
    threads: int = 1,
) -> dict:
    """The rule train_grpo, in each launched process: train `variant` on the prompt set at
    `prompts_path` and (rank 0) write the run record run.json (settings, timing, provenance)."""
    import os
    import time

    import torch

    from grpo_repro import io, provenance
    from grpo_repro.data.sets import read_prompts
    from grpo_repro.train.schedule import checkpoint_steps

    devices = int(os.environ.get("WORLD_SIZE", "1"))
    use_cpu = config["train"]["devices"] == 1 and not torch.cuda.is_available()
    if use_cpu:
        torch.set_num_threads(threads)
    records = read_prompts(prompts_path)
    steps = checkpoint_steps(config["train"], n_epoch_prompts)
    t0 = time.time()
    summary = train(config, variant, ref, records, out_dir, steps, devices=devices, use_cpu=use_cpu)
    summary["seconds"] = time.time() - t0
    summary["seconds_per_step"] = summary["seconds"] / max(1, steps[-1])
    if int(os.environ.get("RANK", "0")) == 0:
        io.write_json(
            run_json,
            {"stage": "train_grpo", **summary, **provenance.record(config, inputs=[prompts_path])},
        )
    print(json.dumps({k: summary[k] for k in ("variant", "steps", "seconds", "seconds_per_step")}))
    return summary
