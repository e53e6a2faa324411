"""Every GRPOConfig field that affects the loss or the sampling is set by the project
(grpo_repro.train.args.grpo_args) or reviewed below as harmless: a TRL upgrade that adds a field
with a new default fails this test until someone decides what it should be (TRL's defaults drifted
from the paper before: beta=0.0, loss_type="dapo", use_bias_correction_kl=True)."""

import dataclasses

import pytest
from trl import GRPOConfig

from grpo_repro.train.args import grpo_args
from grpo_repro.train.run_settings import grpo_run

#: fields left at TRL's default, each with the reason it cannot change the loss or the samples
REVIEWED = {
    # logging, reporting, progress
    **dict.fromkeys(
        [
            "logging_strategy",
            "logging_first_step",
            "log_on_each_node",
            "logging_nan_inf_filter",
            "include_num_input_tokens_seen",
            "log_level",
            "log_level_replica",
            "run_name",
            "project",
            "trackio_space_id",
            "trackio_bucket_id",
            "trackio_static_space_id",
            "log_multimodal",
            "num_completions_to_print",
            "log_unique_prompts",
            "log_completions_hub_repo",
            "skip_memory_metrics",
            "debug",
        ],
        "logging only",
    ),
    # evaluation inside the trainer (the project evaluates in its own stage)
    **dict.fromkeys(
        [
            "eval_strategy",
            "eval_steps",
            "eval_delay",
            "per_device_eval_batch_size",
            "prediction_loss_only",
            "eval_on_start",
            "eval_do_concat_batches",
            "eval_use_gather_object",
            "eval_accumulation_steps",
            "include_for_metrics",
            "batch_eval_metrics",
            "bf16_full_eval",
            "fp16_full_eval",
            "num_generations_eval",
            "load_best_model_at_end",
            "metric_for_best_model",
            "greater_is_better",
            "do_eval",
            "do_predict",
            "do_train",
        ],
        "no evaluation inside the trainer",
    ),
    # saving, the hub, resume bookkeeping
    **dict.fromkeys(
        [
            "save_only_model",
            "save_on_each_node",
            "enable_jit_checkpoint",
            "push_to_hub",
            "hub_token",
            "hub_private_repo",
            "hub_model_id",
            "hub_strategy",
            "hub_always_push",
            "hub_revision",
            "resume_from_checkpoint",
            "ignore_data_skip",
            "restore_callback_states_from_checkpoint",
        ],
        "checkpoint files and the hub, not the computation (resume is exact: tests)",
    ),
    # distributed / memory infrastructure: the same arithmetic
    **dict.fromkeys(
        [
            "accelerator_config",
            "parallelism_config",
            "ddp_find_unused_parameters",
            "ddp_bucket_cap_mb",
            "ddp_broadcast_buffers",
            "ddp_static_graph",
            "ddp_backend",
            "ddp_timeout",
            "fsdp",
            "fsdp_config",
            "deepspeed",
            "local_rank",
            "ds3_gather_for_generation",
            "torch_empty_cache_steps",
            "auto_find_batch_size",
            "activation_checkpointing",
            "activation_checkpointing_kwargs",
            "gradient_checkpointing_kwargs",
            "torch_compile_backend",
            "torch_compile_mode",
            "liger_kernel_config",
            "use_cache",
            "optim_target_modules",
            "model_init_kwargs",
            "trust_remote_code",
        ],
        "infrastructure: placement, memory or compilation settings (off), not the loss",
    ),
    # data loading: the order is the project's epoch-seeded RepeatSampler
    **dict.fromkeys(
        [
            "dataloader_drop_last",
            "dataloader_pin_memory",
            "dataloader_persistent_workers",
            "dataloader_prefetch_factor",
            "dataloader_multiprocessing_context",
            "dataloader_in_order",
            "label_names",
            "train_sampling_strategy",
            "length_column_name",
            "pad_to_multiple_of",
        ],
        "the prompt order comes from GRPO's RepeatSampler; padding is masked out",
    ),
    # vLLM placement (vLLM is off on CPU; the server's address is set, in server mode)
    **dict.fromkeys(
        [
            "vllm_model_impl",
            "vllm_enable_sleep_mode",
            "vllm_structured_outputs_regex",
            "vllm_server_host",  # with vllm_server_base_url set: ignored
            "vllm_server_port",
            "vllm_max_model_length",
            "vllm_tensor_parallel_size",
        ],
        "vLLM placement and memory; sampling parameters are set explicitly",
    ),
    # parameters of options the project switches off explicitly
    **dict.fromkeys(
        [
            "sapo_temperature_neg",
            "sapo_temperature_pos",
            "vespo_k_pos",
            "vespo_lambda_pos",
            "vespo_k_neg",
            "vespo_lambda_neg",
        ],
        "only read by loss_type sapo / vespo (loss_type is set)",
    ),
    **dict.fromkeys(
        ["entropy_coef_min", "entropy_coef_max", "entropy_coef_delta", "entropy_target"],
        "only read when use_adaptive_entropy (set False, entropy_coef 0)",
    ),
    **dict.fromkeys(
        [
            "vllm_importance_sampling_mode",
            "vllm_importance_sampling_clip_max",
            "vllm_importance_sampling_clip_min",
            "vllm_importance_sampling_cap",
        ],
        "only read when vllm_importance_sampling_correction (set False)",
    ),
    "max_tool_calling_iterations": "no tools",
    "transformers_continuous_batching_config": "continuous batching is off",
}


def test_every_loss_or_sampling_field_is_set_or_reviewed(default_config, tmp_path):
    kwargs, _ = grpo_args(grpo_run(default_config, "grpo", 0), tmp_path, 10)
    fields = {f.name for f in dataclasses.fields(GRPOConfig) if f.init}
    unreviewed = sorted(fields - set(kwargs) - set(REVIEWED))
    assert not unreviewed, (
        f"GRPOConfig fields neither set in grpo_repro.train.args nor reviewed here: {unreviewed}"
    )
    assert not set(kwargs) & set(REVIEWED), "a field is both set and listed as a harmless default"
    assert not set(REVIEWED) - fields, (
        f"reviewed fields TRL no longer has: {set(REVIEWED) - fields}"
    )


def test_loss_relevant_fields_have_the_papers_values(default_config, tmp_path):
    kwargs, _ = grpo_args(grpo_run(default_config, "grpo", 0), tmp_path, 10)
    assert kwargs["beta"] == 0.1 and kwargs["loss_type"] == "grpo"
    assert kwargs["epsilon"] == kwargs["epsilon_high"] == 0.2 and kwargs["delta"] is None
    assert kwargs["entropy_coef"] == 0.0 and kwargs["neftune_noise_alpha"] is None
    assert kwargs["vllm_importance_sampling_correction"] is False
    assert kwargs["use_liger_kernel"] is False and kwargs["top_entropy_quantile"] == 1.0


def test_colocate_leaves_the_server_fields_at_trls_defaults(default_config, tmp_path):
    """The default configuration's GRPOConfig is unchanged by the server fields it now states."""
    kwargs, _ = grpo_args(grpo_run(default_config, "grpo", 0), tmp_path, 10)
    defaults = {f.name: f.default for f in dataclasses.fields(GRPOConfig)}
    assert kwargs["use_vllm"] is False and kwargs["vllm_mode"] == "colocate"
    for name in ("vllm_server_base_url", "vllm_group_port", "vllm_server_timeout"):
        assert kwargs[name] == defaults[name], name
    assert kwargs["report_to"] == []


def paper_run(**runtime):
    """The paper configuration's grpo run, with runtime fields (server_url, group_port, ...)."""
    from grpo_repro import config as cfg
    from tests.helpers import ROOT

    run = grpo_run(cfg.load(ROOT / "config" / "paper.yaml"), "grpo", 0)
    return dataclasses.replace(run, **runtime)


def test_server_mode_connects_to_the_jobs_server(tmp_path):
    runtime = {"server_url": "http://127.0.0.1:45678", "group_port": 45999}
    kwargs, _ = grpo_args(paper_run(**runtime), tmp_path, 10, devices=7)
    assert kwargs["use_vllm"] is True and kwargs["vllm_mode"] == "server"
    assert kwargs["vllm_server_base_url"] == "http://127.0.0.1:45678"
    assert kwargs["vllm_group_port"] == 45999 and kwargs["vllm_server_timeout"] > 0
    assert kwargs["per_device_train_batch_size"] == 16  # 28 x 16 / (4 x 7): the server trains none


def test_server_mode_without_a_server_is_refused(tmp_path):
    with pytest.raises(ValueError, match="train.vllm_mode server"):
        grpo_args(paper_run(), tmp_path, 10, devices=7)


@pytest.mark.parametrize(
    "runtime,expect",
    [({}, []), ({"report_to": "none"}, []), ({"report_to": "tensorboard"}, ["tensorboard"])],
)
def test_report_to(default_config, tmp_path, runtime, expect):
    """The tracker is the run's runtime field report_to (the rule's resource, or the
    configuration's train.report_to): it changes GRPOConfig's report_to, never the run."""
    run = dataclasses.replace(grpo_run(default_config, "grpo", 0), **runtime)
    assert grpo_args(run, tmp_path, 10)[0]["report_to"] == expect
    train = {**default_config["train"], "report_to": "wandb"}  # the configuration's, else
    wandb = grpo_run({**default_config, "train": train}, "grpo", 0)
    assert grpo_args(wandb, tmp_path, 10)[0]["report_to"] == ["wandb"] and wandb == run


#: the loss and advantage of the paper's TRL (its run used mu 10 and clip 0.2, which TRL gained on
#: 2025-02-20; v0.16.0's GRPOTrainer.compute_loss: (per_token_loss * mask).sum() / mask.sum() over
#: the micro-batch, TRL 1.16's `bnpo`; its advantage (r - mean) / (std + 1e-4), torch's unbiased std
#: over the group: TRL 1.16's scale_rewards `group`; no bias-corrected KL, no importance-sampling
#: correction, token-level ratios): docs/gpu.md, "The paper's TRL"
PAPERS_TRL = {
    "loss_type": "bnpo",
    "scale_rewards": "group",
    "beta": 0.1,
    "epsilon": 0.2,
    "epsilon_high": 0.2,
    "num_iterations": 10,
    "num_generations": 16,
    "learning_rate": 5e-6,
    "use_bias_correction_kl": False,
    "importance_sampling_level": "token",
    "vllm_importance_sampling_correction": False,
    "temperature": 0.1,
    "max_completion_length": 200,
    "per_device_train_batch_size": 16,
    "gradient_accumulation_steps": 4,
    "sync_ref_model": False,
    # GRPOConfig never set a schedule: transformers' default, linear decay to 0, no warmup
    "lr_scheduler_type": "linear",
    "warmup_steps": 0,
    "cast_lm_head_to_fp32": False,  # the head in bf16 under autocast (TRL had no other until 2025-11)
}


def test_the_paper_configurations_grpo_config_is_the_papers_trl(tmp_path):
    runtime = {"server_url": "http://127.0.0.1:45678", "group_port": 45999}
    kwargs, extra = grpo_args(paper_run(**runtime), tmp_path, 2660, devices=7)
    assert {k: kwargs[k] for k in PAPERS_TRL} == PAPERS_TRL
    assert extra["paper_advantage"] is False and extra["advantage"] == "trl"  # no eq. 4 rescale
    # the log-probs of the ratio, clip and KL at temperature 1: TRL before its #3029 (2025-03-11)
    assert extra["logprob_temperature"] == 1.0 and kwargs["temperature"] == 0.1
