"""GRPOConfig of a run (Sec. 2 objective, Sec. 6 experiment) with every hyperparameter explicit:
TRL's defaults drifted from the paper (beta=0, loss_type=dapo, ...), so nothing is inherited.

grpo_args reads one run (grpo_repro.train.run_settings.GRPORun): its train settings
(`run.train["beta"]`, ...), variant and GRPO seed, and its runtime fields, which never change
results: the experiment tracker (`run.report_to`, train.report_to) and, in vllm_mode server, the
address of the job's vLLM server (`run.server_url`, `run.group_port`, set by
grpo_repro.train.launch.launch). The resume fingerprint (grpo_repro.train.grpo.fingerprint) reads
the result-relevant fields only, so neither invalidates a resume.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from grpo_repro.train.trl_variant import trl_settings

if TYPE_CHECKING:
    from grpo_repro.train.run_settings import GRPORun

SERVER_TIMEOUT_S = 240.0  # TRL client wait for the server (its default; serve() saw it healthy)
GROUP_PORT = 51216  # TRL's default weight-sync port, used only in server mode (launch picks one)
#: the share of a GPU a colocated vLLM engine reserves (train.vllm_mode colocate; TRL's default,
#: stated): the memory model's (grpo_repro.memory.train_process)
VLLM_COLOCATE_MEMORY = 0.3


def uses_server(train) -> bool:
    """vLLM generation on a server of its own (train.vllm_mode server, with train.use_vllm)."""
    return bool(train["use_vllm"]) and train.get("vllm_mode", "colocate") == "server"


def per_device_batch(train, devices: int) -> int:
    """Completions per device per micro-step: prompts_per_step * G / (grad_accum * devices), whole
    groups of G (the configuration's check: grpo_repro.config_checks.layout_errors)."""
    total = train["prompts_per_step"] * train["num_generations"]
    return total // (train["grad_accum"] * devices)


def grpo_args(
    run: GRPORun,
    work_dir: str | Path,
    total_steps: int,
    devices: int = 1,
    use_cpu: bool = True,
) -> tuple[dict, dict]:
    """(GRPOConfig kwargs, extra settings) of `run` with every hyperparameter explicit."""
    train, variant = run.train, run.variant
    settings = trl_settings(variant, train["advantage"], train.get("two_kl_alpha"))
    if uses_server(train) and not run.server_url:
        raise ValueError(
            "train.vllm_mode server: the run has no vLLM server address (run.server_url); "
            "launch the run with grpo_repro.train.launch.launch, which starts the server"
        )
    kwargs = dict(
        output_dir=str(work_dir),
        # optimisation (AdamW: TRL's and transformers' default, stated)
        optim="adamw_torch_fused",
        optim_args=None,
        learning_rate=train["learning_rate"],
        lr_scheduler_type=train["lr_schedule"],
        warmup_steps=0,
        weight_decay=0.0,
        adam_beta1=0.9,
        adam_beta2=0.999,
        adam_epsilon=1e-8,
        max_grad_norm=1.0,
        lr_scheduler_kwargs=None,
        label_smoothing_factor=0.0,
        neftune_noise_alpha=None,  # no noise on the embeddings
        max_steps=total_steps,
        num_train_epochs=1,
        per_device_train_batch_size=per_device_batch(train, devices),
        gradient_accumulation_steps=train["grad_accum"],
        steps_per_generation=train["grad_accum"],
        # the paper's objective (Sec. 2)
        beta=train["beta"],
        use_bias_correction_kl=train["kl_estimator"]
        == "k3_ratio",  # k3 x pi/pi_old: grad KL(pi || pi_ref)
        epsilon=train["clip_eps"],
        epsilon_high=train["clip_eps"],
        delta=None,  # no upper clip of the ratio for negative advantages (two-sided clipping only)
        num_iterations=train["num_iterations"],
        num_generations=train["num_generations"],
        loss_type=train["loss_type"],
        scale_rewards=settings["scale_rewards"],
        sync_ref_model=settings["sync_ref_model"],
        ref_model_mixup_alpha=settings["ref_model_mixup_alpha"],
        ref_model_sync_steps=settings["ref_model_sync_steps"],
        importance_sampling_level="token",
        mask_truncated_completions=False,
        disable_dropout=True,
        top_entropy_quantile=1.0,
        multi_objective_aggregation="sum_then_normalize",
        reward_weights=None,  # one reward function, weight 1
        entropy_coef=0.0,  # no entropy bonus (the paper's objective has none)
        use_adaptive_entropy=False,
        off_policy_mask_threshold=None,  # no off-policy sequence masking
        # the LM head's precision under bf16 autocast (train.lm_head_fp32; the paper's TRL: bf16)
        cast_lm_head_to_fp32=train["lm_head_fp32"],
        router_aux_loss_coef=None,  # dense models: no MoE auxiliary loss
        # generation
        max_completion_length=train["max_completion_length"],
        temperature=train["temperature"],
        top_p=1.0,
        top_k=0,
        min_p=None,
        repetition_penalty=1.0,
        generation_kwargs=None,
        generation_batch_size=None,  # = per-device batch x steps_per_generation
        cache_implementation=None,
        use_transformers_continuous_batching=False,
        use_transformers_paged=False,
        chat_template_kwargs=None,  # prompts are rendered strings (grpo_repro.data.sets)
        use_vllm=train["use_vllm"],
        # colocate: vLLM inside each training process | server: the job's vLLM server on its own
        # GPU (grpo_repro.train.vllm_server), which generates for every process (TRL's main
        # process gathers the prompts, asks the server, and scatters the completions)
        vllm_mode=train["vllm_mode"],
        vllm_server_base_url=run.server_url,  # None: unused (colocate)
        vllm_group_port=int(GROUP_PORT if run.group_port is None else run.group_port),
        vllm_server_timeout=SERVER_TIMEOUT_S,
        vllm_gpu_memory_utilization=VLLM_COLOCATE_MEMORY,  # colocate only
        # no importance-sampling correction between vLLM's sampler and the policy (the paper's TRL had
        # none; it would reweight the loss silently when use_vllm is on)
        vllm_importance_sampling_correction=False,
        # bookkeeping
        seed=int(run.seed),  # the GRPO seed (train.seeds): sampling and the order of prompts
        data_seed=int(run.seed),
        shuffle_dataset=True,
        logging_steps=1,
        save_strategy="steps",
        save_steps=train["save_steps"],
        save_total_limit=1,
        report_to=[] if run.report_to == "none" else [run.report_to],  # logging only
        disable_tqdm=False,
        log_completions=False,
        use_cpu=use_cpu,
        bf16=train["bf16"],
        fp16=False,
        tf32=None,
        torch_compile=False,
        use_liger_kernel=False,  # TRL's own loss, not Liger's fused one
        average_tokens_across_devices=True,
        full_determinism=False,
        remove_unused_columns=False,  # the reward reads the dataset's `gold` column
        gradient_checkpointing=False,
        dataloader_num_workers=0,
    )
    extra = {
        "variant": variant,
        "kl_estimator": train["kl_estimator"],
        "advantage": train["advantage"],
        "paper_advantage": settings["paper_advantage"],
        "smoothing_eps": train["smoothing_eps"] if settings["paper_advantage"] else None,
        "devices": devices,
        # the loss's log-probs at logits / this (PaperGRPOTrainer.use_logprob_temperature)
        "logprob_temperature": train["temperature"]
        if train["logprob_temperature"] is None
        else train["logprob_temperature"],
    }
    if "kl_weights" in settings:  # two-KL variants only: the other variants' settings never change
        extra["two_kl_alpha"] = float(train["two_kl_alpha"])
        extra["kl_weights"] = list(settings["kl_weights"])
    return kwargs, extra
