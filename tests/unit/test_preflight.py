"""Preflight checks (grpo_repro.preflight): what a paper run needs beyond its files (CUDA, bf16,
vLLM, the driver, the hub's files in the local cache), each failure naming its config key; the
device only on the machine that runs jobs."""

import importlib.util

import pytest

from grpo_repro import config as cfg
from grpo_repro import preflight
from grpo_repro.gpus import job_gpus
from grpo_repro.prefetch import check_at_start
from grpo_repro.preflight import PreflightError, check_device
from tests.helpers import ROOT

DEFAULT = ROOT / "config" / "config.yaml"
PAPER = ROOT / "config" / "paper.yaml"


CPU_FACTS = {"count": 0, "driver": None, "torch": "2.13.0+cpu", "cuda_build": None}


def gpus(n: int, bf16: bool = True) -> dict:
    """The device probe's facts of a machine with `n` GPUs (preflight.facts)."""
    return {"count": n, "name": "Test GPU", "bf16": bf16, "driver": "580.65", "cuda_build": "13.0"}


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(preflight, "probe", lambda: CPU_FACTS)


@pytest.fixture
def gpu(monkeypatch):
    monkeypatch.setattr(preflight, "probe", lambda: gpus(8))


@pytest.fixture
def vllm(monkeypatch, request):
    """vLLM installed (param True) or not (False), whatever this environment holds."""
    real = importlib.util.find_spec

    def find_spec(name, *a, **k):
        if name == "vllm":
            return object() if request.param else None
        return real(name, *a, **k)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


@pytest.fixture
def vllm_here(monkeypatch):
    """vLLM installed (config/paper.yaml asks for it: train.use_vllm), whatever this environment
    holds: the tests of the other keys are not stopped by it."""
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a, **k: object() if name == "vllm" else real(name, *a, **k),
    )


@pytest.fixture
def hub(offline_hub):
    """The local hub cache holds what config/paper.yaml reads (the rehearsal's stand-ins, at the
    paper's revisions), read offline."""
    return offline_hub


@pytest.fixture
def empty_hub(monkeypatch, tmp_path):
    """An empty local hub cache."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_empty"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def paper(**train):
    config = cfg.load(PAPER)
    config["train"].update(train)
    return config


def test_bf16_on_a_cpu_machine_names_the_key_file_and_line(no_gpu, hub):
    with pytest.raises(PreflightError) as err:
        check_at_start(paper(), local=True, files=[PAPER])
    line = next(i for i, s in enumerate(PAPER.read_text().splitlines(), 1) if "  bf16: true" in s)
    assert f"config key 'train.bf16' ({PAPER}:{line})" in str(err.value)
    assert "CUDA" in str(err.value) and "train.bf16: false" in str(err.value)


def test_cluster_login_node_skips_the_device(no_gpu, hub, vllm_here):
    """A SLURM run loads on a login node without GPUs: only the jobs check the device."""
    check_at_start(paper(), local=False, files=[PAPER])
    with pytest.raises(PreflightError, match="'train.bf16'"):
        check_device({"train": paper()["train"]})  # the job on a node without a GPU


def test_bf16_unsupported_gpu(monkeypatch, hub):
    monkeypatch.setattr(preflight, "probe", lambda: gpus(8, bf16=False))
    with pytest.raises(PreflightError, match=r"'train.bf16'.*bf16 support.*Test GPU"):
        check_at_start(paper(), local=True)


def test_paper_config_passes_on_a_gpu_with_the_hub_cached(gpu, hub, vllm_here):
    check_at_start(paper(), local=True, files=[DEFAULT, PAPER])
    check_device({"train": paper()["train"]})


@pytest.mark.parametrize("driver", ["550.127.05", "570.86.10"])
def test_an_old_driver_is_refused_naming_the_driver_the_stack_needs(
    monkeypatch, hub, vllm_here, driver
):
    """A driver older than R580 cannot run the pinned stack (torch 2.13's and vLLM 0.30's CUDA 13
    builds), even where torch says CUDA is available (a CUDA 12 torch put under it): refused,
    naming the driver found and the one needed; the job's own check says the same."""
    monkeypatch.setattr(preflight, "probe", lambda: {**gpus(8), "driver": driver})
    with pytest.raises(PreflightError) as err:
        check_at_start(paper(), local=True, files=[DEFAULT, PAPER])
    msg = str(err.value)
    assert f"driver {driver}" in msg and "driver >= 580" in msg and "'train.use_vllm'" in msg
    with pytest.raises(PreflightError, match="driver >= 580"):
        check_device({"train": paper()["train"]})
    monkeypatch.setattr(preflight, "probe", lambda: {**gpus(8), "driver": "580.65.06"})
    check_device({"train": paper()["train"]})


def test_more_training_processes_than_gpus(monkeypatch, hub, vllm_here):
    monkeypatch.setattr(preflight, "probe", lambda: gpus(4))
    with pytest.raises(PreflightError) as err:
        check_at_start(paper(), local=True, files=[PAPER])  # train.devices: 7
    assert "config key 'train.devices' (" in str(err.value) and "TRAIN_GPUS" in str(err.value)
    # the paper's layout: the vLLM server takes a GPU of its own beside the training processes
    with pytest.raises(PreflightError, match=r"'train.devices'.*vLLM server.*train.devices <= 3"):
        check_device({"train": paper()["train"]})
    with pytest.raises(PreflightError, match=r"train.devices <= 3"):
        check_device({"train": paper(devices=4)["train"]})
    check_device({"train": paper(devices=3)["train"]})
    check_device({"train": paper(devices=4, vllm_mode="colocate")["train"]})  # vLLM shares them


@pytest.mark.parametrize("tracker", ["tensorboard", "wandb", "trackio"])
def test_a_tracker_that_is_not_installed_names_the_key(monkeypatch, tracker):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a, **k: None if name == tracker else real(name, *a, **k),
    )
    config = cfg.load(ROOT / "config" / "config.yaml")
    assert preflight.software_errors(config) == []  # report_to: none
    config["train"]["report_to"] = tracker
    [(keys, message)] = preflight.software_errors(config)
    assert keys == ["train", "report_to"] and f"pip install {tracker}" in message


def test_several_processes_on_a_cpu_are_a_cpu_run(no_gpu):
    check_device({"train": {"bf16": False, "devices": 2}})  # accelerate launch of 2 CPU processes


@pytest.mark.parametrize("vllm", [False], indirect=True)
def test_vllm_not_installed_names_each_key(vllm, gpu, hub):
    config = paper(use_vllm=True)
    config["eval"]["backend"] = "vllm"
    for local in (True, False):  # the same .venv on the login node: checked for any executor
        with pytest.raises(PreflightError) as err:
            check_at_start(config, local=local, files=[PAPER])
        msg = str(err.value)
        assert "'train.use_vllm'" in msg and "train.use_vllm: false" in msg
        assert "'eval.backend'" in msg and "eval.backend: hf" in msg and "envs/gpu.txt" in msg
    with pytest.raises(PreflightError, match="'eval.backend'"):
        check_device({"train": {"bf16": False}, "eval": config["eval"]})


@pytest.mark.parametrize("vllm", [True], indirect=True)
def test_vllm_needs_cuda(vllm, no_gpu):
    with pytest.raises(
        PreflightError, match=r"'train.use_vllm'.*needs a CUDA GPU.*vllm.platform: cpu"
    ):
        check_device({"train": {"bf16": False, "use_vllm": True}})
    with pytest.raises(PreflightError, match=r"'eval.backend'.*vLLM on vllm.platform cuda needs"):
        check_device({"train": {"bf16": False}, "eval": {"backend": "vllm"}})


@pytest.mark.parametrize("vllm", [True], indirect=True)
def test_vllm_on_the_cpu_platform_needs_no_gpu(vllm, no_gpu, monkeypatch):
    """vllm.platform cpu (vLLM's CPU backend) asks nothing of the device and no `gpu` resource."""
    monkeypatch.setattr(preflight, "vllm_build", lambda: "cpu")
    job = {"train": {"bf16": False, "use_vllm": True}, "eval": {"backend": "vllm"}}
    check_device({**job, "vllm": {"platform": "cpu"}})
    assert job_gpus({**job, "vllm": {"platform": "cpu"}}, "eval") == 0
    assert job_gpus(job, "eval") == 1  # vllm.platform cuda, the default


@pytest.mark.parametrize("vllm", [True], indirect=True)
@pytest.mark.parametrize("platform, build", [("cpu", "cuda"), ("cuda", "cpu")])
def test_a_vllm_build_of_the_other_platform_names_vllm_platform(vllm, platform, build, monkeypatch):
    monkeypatch.setattr(preflight, "vllm_build", lambda: build)
    config = cfg.load(ROOT / "config" / "config.yaml")
    config["eval"]["backend"], config["vllm"]["platform"] = "vllm", platform
    [(keys, message)] = preflight.software_errors(config)
    assert keys == ["vllm", "platform"] and f"a {build} build" in message
    assert f"vllm.platform: {build}" in message


def test_what_the_cache_lacks_names_each_key_and_the_prefetch(gpu, empty_hub, vllm_here):
    """Jobs never reach the hub: a paper run whose cache lacks the model and the data stops at
    start, naming both keys, what is missing and the prefetch command with the run's files."""
    with pytest.raises(PreflightError) as err:
        check_at_start(paper(), local=True, files=[DEFAULT, PAPER])
    msg = str(err.value)
    assert "config key 'model.name_or_path'" in msg and "Qwen/Qwen2.5-0.5B-Instruct" in msg
    assert "config key 'data.train_path'" in msg and "openai/gsm8k" in msg
    assert f"python -m grpo_repro.prefetch --configfile {PAPER}" in msg


def test_local_model_and_data_need_no_cache(gpu, empty_hub, tmp_path, vllm_here):
    config = paper()
    config["data"].update(train_path="a.jsonl", test_path="b.jsonl")
    config["model"]["name_or_path"] = str(tmp_path)
    check_at_start(config, local=True)


def test_rehearsal_and_default_configs_need_no_device(no_gpu, hub):
    for files in (["paper.yaml", "rehearsal.yaml", "rehearsal_hf.yaml"], ["config.yaml"]):
        check_at_start(cfg.load(*(ROOT / "config" / f for f in files)), local=True)


def test_gpu_rule_scripts_check_the_device_before_loading_a_model():
    scripts = ROOT / "workflow" / "scripts"
    for name, load in (
        ("train_grpo.py", "launch("),
        ("evaluate_run.py", "run_eval_job("),
    ):
        text = (scripts / name).read_text()
        assert "check_device(" in text and text.index("check_device(") < text.rindex(load), name


def test_check_device_probes_in_a_child_and_leaves_cuda_alone(monkeypatch, vllm_here):
    """The device facts come from the probe's child process (here a child that reports 8 GPUs and
    its pid): check_device passes on them, and this process has not initialised CUDA."""
    import json
    import os

    import torch

    report = "d = json.loads(sys.argv[1]); d['pid'] = os.getpid(); print(json.dumps(d))"
    script = "import json, os, sys; " + report
    monkeypatch.setattr(preflight, "PROBE_ARGS", ("-c", script, json.dumps(gpus(8))))
    seen = []
    real = preflight.probe
    monkeypatch.setattr(preflight, "probe", lambda: seen.append(real()) or seen[-1])
    check_device({"train": paper(devices=7)["train"]})  # 7 + the vLLM server's GPU
    assert len(seen) == 1 and seen[0]["pid"] != os.getpid()
    assert not torch.cuda.is_initialized()
