"""Configuration cross-field rules (grpo_repro.config_checks, grpo_repro.config_checks): what one
key allows depends on another (the organism and sampling levers, a built model's tokenizer, the
training batch layout of both vLLM modes, the vLLM platform, speed-only keys); each refusal names
the key, file and line."""

import pytest

from grpo_repro import config as cfg
from grpo_repro.train.run_settings import grpo_run
from tests.unit.test_config import DEFAULT, PAPER, base


def test_cross_field_rules():
    config = base()
    config["data"]["source"] = "gsm8k"
    with pytest.raises(cfg.ConfigError, match="model.name_or_path"):
        cfg.check(config)
    config = base()
    config["organism"]["min_steps"] = 5
    with pytest.raises(cfg.ConfigError, match="organism.min_steps"):
        cfg.check(config)


@pytest.mark.parametrize(
    "section,update,key",
    [
        ("eval", {"val_samples": 60}, "eval.val_samples"),  # more than eval.samples (50)
        ("fixed_point", {"prompts_per_step": 64}, "fixed_point.n_prompts"),  # 32 prompts
        ("organism", {"arch": "gpt2"}, "arch"),  # not in grpo_repro.train.sft.ARCHS
    ],
)
def test_organism_and_sampling_levers_checked(section, update, key):
    config = base()
    config[section].update(update)
    with pytest.raises(cfg.ConfigError, match=key):
        cfg.check(config)


@pytest.mark.parametrize(
    "update, message",
    [
        ({"save_steps": 41}, r"fixed_point.compact.save_steps.*multiple of train.num_iterations"),
        ({"save_steps": 200}, r"fixed_point.compact.save_steps.*at most half"),
        ({"run": "mirror/k3_ratio"}, r"fixed_point.compact.run.*no interior fixed point"),
        ({"samples": 0}, r"fixed_point.compact.samples"),  # the schema's
    ],
)
def test_the_compact_study_is_checked(update, message):
    config = base()
    config["fixed_point"]["compact"].update(update)
    with pytest.raises(cfg.ConfigError, match=message):
        cfg.check(config)
    config["fixed_point"]["compact"] = None  # no compact study: valid
    cfg.check(config)


@pytest.mark.parametrize(
    "update, message",
    [
        ({"samples": 0}, r"zero.samples"),  # the schema's
        ({"screen_train": 0}, r"zero.screen_train"),
        ({"extra_held_out": -1}, r"zero.extra_held_out"),
    ],
)
def test_the_zero_study_is_checked(update, message):
    config = base()
    config["zero"].update(update)
    with pytest.raises(cfg.ConfigError, match=message):
        cfg.check(config)


def test_the_zero_study_needs_the_test_table():
    config = base()
    config["eval"]["splits"] = ["train"]
    with pytest.raises(cfg.ConfigError, match=r"zero.*eval.splits must hold test"):
        cfg.check(config)
    config = base()
    config["zero"] = None  # no study: nothing to check
    cfg.check(config)


def test_val_samples_null_and_fixed_point_batch_null_are_valid():
    config = base()
    config["eval"]["val_samples"] = None
    config["fixed_point"]["prompts_per_step"] = None
    cfg.check(config)


def test_gsm8k_with_a_built_model_needs_the_bpe_tokenizer():
    config = base()
    config["data"]["source"] = "gsm8k"
    config["organism"]["tokenizer"] = "bpe"
    cfg.check(config)  # a built model with a byte-level BPE reads GSM8K
    config["prompt"]["template"] = "chat"
    cfg.check(config)
    config["organism"]["tokenizer"] = "word"
    with pytest.raises(cfg.ConfigError) as err:
        cfg.check(config)
    msg = str(err.value)
    assert "'model.name_or_path'" in msg and "organism.tokenizer: bpe" in msg
    assert "'prompt.template'" in msg  # the word-level tokenizer has no chat template either


@pytest.mark.parametrize(
    "update,key",
    [
        ({"save_steps": 5, "num_iterations": 2}, "train.save_steps"),
        ({"prompts_per_step": 3, "grad_accum": 2}, "train.prompts_per_step"),
        ({"devices": 3}, "train.prompts_per_step"),
        ({"lm_head_fp32": True}, "train.lm_head_fp32"),  # the default's bf16 false: fp32 already
        ({"logprob_temperature": 0}, "train.logprob_temperature"),  # a temperature is positive
    ],
)
def test_training_cross_field_rules(update, key):
    config = base()
    config["train"].update(update)
    with pytest.raises(cfg.ConfigError, match=key):
        cfg.check(config)


LAYOUTS = [  # paper.yaml's train section with these keys: (update, None = valid | (key, message))
    ({}, None),  # 28 prompts x 16 = 448 = 16 per device x 7 devices x 4 micro-steps; GPU 8 serves
    ({"vllm_mode": "colocate"}, None),  # the same 7 training processes, vLLM inside each
    ({"use_vllm": False, "vllm_mode": "colocate"}, None),
    ({"devices": 1, "prompts_per_step": 4}, None),  # one training process and the server's GPU
    (
        {"prompts_per_step": 27},
        (
            "train.prompts_per_step",
            r"extra, not one of them.*multiple of devices x grad_accum = 28$",
        ),
    ),
    (  # 8 training processes (all of a node's GPUs) do not split 28 prompts
        {"devices": 8},
        ("train.prompts_per_step", r"train.devices=8 processes \(the vLLM server's GPU"),
    ),
    (
        {"devices": 8, "vllm_mode": "colocate"},
        ("train.prompts_per_step", r"train.devices=8 processes x train.grad_accum=4 micro-steps:"),
    ),
    ({"grad_accum": 3}, ("train.prompts_per_step", r"= 21")),
    (
        {"use_vllm": False},
        ("train.vllm_mode", r"server .*train.use_vllm is false.*train.vllm_mode: colocate"),
    ),
    ({"vllm_mode": "remote"}, ("train.vllm_mode", r"'remote' is not one of")),
    ({"report_to": "mlflow"}, ("train.report_to", r"'mlflow' is not one of")),
    ({"report_to": None}, ("train.report_to", r"None is not one of")),
]


@pytest.mark.parametrize("update,error", LAYOUTS, ids=[repr(u) for u, _ in LAYOUTS])
def test_batch_layout_of_both_vllm_modes(update, error):
    config = cfg.load(PAPER)
    config["train"].update(update)
    if error is None:
        cfg.check(config)
        return
    key, message = error
    with pytest.raises(cfg.ConfigError, match=rf"'{key}'.*{message}"):
        cfg.check(config)


def test_vllm_mode_error_names_the_users_file(tmp_path):
    """paper.yaml's vllm_mode server with the user's use_vllm false: the user's file and line."""
    mine = tmp_path / "mine.yaml"
    mine.write_text("train:\n  use_vllm: false\n")
    config = cfg.merge(cfg.load(PAPER), cfg.load_yaml(mine))
    with pytest.raises(cfg.ConfigError) as err:
        cfg.check(config, [DEFAULT, PAPER, mine])
    assert f"'train.vllm_mode' ({mine}:2, train.use_vllm)" in str(err.value)


def test_server_mode_on_the_cpu_platform_is_refused_at_load(tmp_path):
    """The paper's server layout with vllm.platform cpu: refused when the configuration loads, naming
    train.vllm_mode (the key to change) and the user's file and line."""
    mine = tmp_path / "mine.yaml"
    mine.write_text("vllm:\n  platform: cpu\n")
    config = cfg.merge(cfg.load(PAPER), cfg.load_yaml(mine))
    with pytest.raises(cfg.ConfigError) as err:
        cfg.check(config, [DEFAULT, PAPER, mine])
    msg = str(err.value)
    assert "'train.vllm_mode'" in msg and "vllm.platform" in msg and f"{mine}:2" in msg
    assert "train.vllm_mode: colocate" in msg
    config["train"]["vllm_mode"] = "colocate"
    cfg.check(config, [DEFAULT, PAPER, mine])  # colocate runs on vLLM's CPU backend


def test_vllm_platform_reaches_only_the_runs_that_use_vllm():
    """vllm.platform is part of a run's settings only where vLLM generates: the default runs'
    settings (params, resume fingerprint) do not change."""
    config = base()
    assert grpo_run(config, "grpo", 0).vllm is None and "vllm" not in cfg.eval_settings(config)
    assert "vllm" not in grpo_run(config, "grpo", 0).params()
    config["train"]["use_vllm"], config["eval"]["backend"] = True, "vllm"
    assert grpo_run(config, "grpo", 0).params()["vllm"] == {"platform": "cuda"}
    assert cfg.eval_settings(config)["vllm"] == {"platform": "cuda"}


def test_report_to_is_speed_only():
    """Changing the experiment tracker changes no run's settings (params, resume fingerprint)."""
    a, b = base(), base()
    b["train"]["report_to"] = "tensorboard"
    ra, rb = grpo_run(a, "grpo", 0), grpo_run(b, "grpo", 0)
    assert ra == rb and ra.params() == rb.params() and rb.report_to == "tensorboard"
    assert "report_to" not in rb.train and "report_to" not in rb.params()["train"]
    assert cfg.speed_setting(b, "train", "report_to") == "tensorboard"
    assert "report_to" not in cfg.without_speed_only(b)["train"]
    b["train"]["vllm_mode"] = "server"  # a setting that changes the samples: a new run
    assert grpo_run(a, "grpo", 0).params() != grpo_run(b, "grpo", 0).params()
