"""GRPOConfig of a run (Sec. 2 objective, Sec. 6 experiment) with every hyperparameter explicit:
TRL's defaults drifted from the paper (beta=0, loss_type=dapo, ...), so nothing is inherited."""

from __future__ import annotations

from pathlib import Path

from grpo_repro.train.variants import trl_settings


def per_device_batch(train: dict, devices: int) -> int:
    """Completions per device per micro-step: prompts_per_step * G / (grad_accum * devices)."""
    total = train["prompts_per_step"] * train["num_generations"]
    per = total // (train["grad_accum"] * devices)
    if per * train["grad_accum"] * devices != total or per % train["num_generations"]:
        raise ValueError(
            "train.prompts_per_step * train.num_generations must split into whole groups per device and "
            f"micro-step: {train['prompts_per_step']} x {train['num_generations']} over "
            f"{train['grad_accum']} accumulation steps x {devices} devices"
        )
    return per


def grpo_args(
    config: dict,
    variant: str,
    work_dir: str | Path,
    total_steps: int,
    devices: int = 1,
    use_cpu: bool = True,
) -> tuple[dict, dict]:
    """(GRPOConfig kwargs, extra settings) with every hyperparameter explicit."""
    train = config["train"]
    settings = trl_settings(variant, train["advantage"])
    kwargs = dict(
        output_dir=str(work_dir),
        # optimisation
        learning_rate=train["learning_rate"],
        lr_scheduler_type=train["lr_schedule"],
        warmup_steps=0,
        weight_decay=0.0,
        adam_beta1=0.9,
        adam_beta2=0.999,
        adam_epsilon=1e-8,
        max_grad_norm=1.0,
        max_steps=total_steps,
        num_train_epochs=1,
        per_device_train_batch_size=per_device_batch(train, devices),
        gradient_accumulation_steps=train["grad_accum"],
        steps_per_generation=train["grad_accum"],
        # the paper's objective (Sec. 2)
        beta=train["beta"],
        epsilon=train["clip_eps"],
        epsilon_high=train["clip_eps"],
        num_iterations=train["num_iterations"],
        num_generations=train["num_generations"],
        loss_type=settings["loss_type"],
        scale_rewards=settings["scale_rewards"],
        sync_ref_model=settings["sync_ref_model"],
        ref_model_mixup_alpha=settings["ref_model_mixup_alpha"],
        ref_model_sync_steps=settings["ref_model_sync_steps"],
        importance_sampling_level="token",
        mask_truncated_completions=False,
        disable_dropout=True,
        top_entropy_quantile=1.0,
        multi_objective_aggregation="sum_then_normalize",
        # generation
        max_completion_length=train["max_completion_length"],
        temperature=train["temperature"],
        top_p=1.0,
        top_k=0,
        repetition_penalty=1.0,
        use_vllm=train["use_vllm"],
        vllm_mode="colocate",  # vLLM inside the training processes (no separate server to start)
        # bookkeeping
        seed=config["seed"],
        data_seed=config["seed"],
        shuffle_dataset=True,
        logging_steps=1,
        save_strategy="steps",
        save_steps=train["save_steps"],
        save_total_limit=1,
        report_to=[],
        disable_tqdm=False,
        log_completions=False,
        use_cpu=use_cpu,
        bf16=train["bf16"],
        gradient_checkpointing=False,
        dataloader_num_workers=0,
    )
    extra = {
        "variant": variant,
        "advantage": train["advantage"],
        "paper_advantage": settings["paper_advantage"],
        "smoothing_eps": train["smoothing_eps"] if settings["paper_advantage"] else None,
        "devices": devices,
    }
    return kwargs, extra
