"""The memory model of every GPU job (grpo_repro.memory): the parameter count of the paper's model
against its published number, every job of the paper's graph (alone and with its studies) under one
GPU's memory at its real micro-batch, and the layout of the jobs derived from the training (the
zero-success control keeps the training's per-device micro-batch, accumulation making up the step;
one that fits as it is, or a CPU run, stays as it is)."""

import json

import pytest

from grpo_repro import config as cfg
from grpo_repro import memory, plan
from grpo_repro.train.args import per_device_batch
from grpo_repro.train.run_settings import grpo_run
from grpo_repro.workflow_plan import Plan
from grpo_repro.zero import CONTROL_TRAIN
from tests.helpers import ROOT

PAPER = ROOT / "config" / "paper.yaml"
STUDIES = ROOT / "config" / "paper_studies.yaml"
GSM8K = {"train": 7473, "test": 1319}  # openai/gsm8k's published split sizes
QWEN = "Qwen/Qwen2.5-0.5B-Instruct"


def test_the_shape_counts_qwens_published_parameters():
    """Qwen2.5-0.5B: 494,032,768 parameters (its model card's 0.49B; tied embeddings)."""
    shape = memory.KNOWN[QWEN]
    assert shape.params == 494_032_768
    untied = memory.Shape(**{**shape.__dict__, "tied": False})
    assert untied.params - shape.params == 151936 * 896  # an untied head: one more matrix
    assert shape.kv_bytes(2) == 2 * 24 * 128 * 2  # keys and values, 2 KV heads of 64, bf16


@pytest.mark.parametrize("files", [[PAPER], [PAPER, STUDIES]], ids=["paper", "paper+studies"])
def test_every_gpu_job_of_the_paper_graph_fits_one_gpu(files):
    """Each job's memory model at its real micro-batch (the settings the job reads) is under the
    GPU's 80 GB; a training job's processes keep 16 completions per device."""
    config = cfg.load(*files)
    jobs = plan.jobs(config, json.loads(plan.THROUGHPUT.read_text()), GSM8K)
    model_jobs = [j for j in jobs if j.gpus]
    assert {"train_grpo", "zero_control", "zero_measure", "evaluate_run"} <= {
        j.rule for j in model_jobs
    }
    for j in model_jobs:
        assert j.memory, j.key
        for est in j.memory:
            assert est.device == 80e9
            assert est.fits, f"{j.key}: {est.line()}"
            if "micro-batch" in est.what:
                assert est.what.endswith("micro-batch 16"), (j.key, est.what)


def test_the_zero_control_keeps_the_trainings_micro_batch():
    """The control trains in one process: with the paper's 28 prompts x 16 and grad_accum 4 as they
    are, its micro-batch would be 112 completions (beside a colocated vLLM engine), which the
    memory model does not fit on 80 GB; its layout keeps 16 per micro-step, 28 micro-steps, and
    the same 448 completions per optimizer step."""
    config = cfg.load(PAPER)
    as_is = grpo_run(config, "grpo", 0, train_overrides=CONTROL_TRAIN).sections["train"]
    assert per_device_batch(as_is, 1) == 112
    tokens = memory.seq_tokens(config, 200)
    est = memory.train_process(as_is, memory.KNOWN[QWEN], tokens, memory.device_bytes(config))
    assert not est.fits and est.total > 100e9
    control = Plan(config, GSM8K).zero_control_run().sections["train"]
    assert control["devices"] == 1 and control["vllm_mode"] == "colocate"
    assert per_device_batch(control, 1) == 16 and control["grad_accum"] == 28
    assert control["prompts_per_step"] * control["num_generations"] == 448


def test_a_derived_job_that_fits_or_runs_on_the_cpu_stays_as_it_is():
    """The default configuration (a CPU run): the control's and the fixed-point runs' settings are
    the overrides alone; on a GPU with memory to spare (gpu.memory_gb 400) the paper's control
    fits as it is; a model of unknown shape keeps the training's micro-batch."""
    default = cfg.load()
    assert memory.derived_layout(default, CONTROL_TRAIN) == CONTROL_TRAIN
    big = cfg.load(PAPER)
    big["gpu"]["memory_gb"] = 400
    assert memory.derived_layout(big, CONTROL_TRAIN) == CONTROL_TRAIN
    unknown = cfg.load(PAPER)
    unknown["model"] = {"name_or_path": "someone/unknown-model", "revision": None}
    unknown["gpu"]["memory_gb"] = 400
    assert memory.derived_layout(unknown, CONTROL_TRAIN)["grad_accum"] == 28


def test_a_layout_that_cannot_keep_the_micro_batch_is_refused():
    """A derived run of 18 completions per prompt on the paper's 7 processes (18 per device as
    it is, which a 20 GB GPU does not hold) cannot keep the training's 16 per micro-step: named,
    not guessed."""
    config = cfg.load(PAPER)
    config["gpu"]["memory_gb"] = 20
    with pytest.raises(ValueError, match="cannot keep the training's micro-batch of 16"):
        memory.derived_layout(config, {"num_generations": 18})


def test_the_model_shape_is_read_from_a_local_config(tmp_path):
    """A local model directory: its config.json's shape (Qwen2/Llama field names)."""
    c = {
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 128,
        "vocab_size": 1000,
        "tie_word_embeddings": False,
    }
    (tmp_path / "config.json").write_text(json.dumps(c))
    shape = memory.model_shape({"name_or_path": str(tmp_path), "revision": None})
    assert shape == memory.Shape(64, 2, 4, 2, 128, 1000, False)
    assert memory.model_shape({"name_or_path": None, "revision": None}) is None  # the organism
