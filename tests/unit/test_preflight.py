"""Preflight checks (grpo_repro.preflight): what a paper run needs beyond its files (CUDA, bf16,
vLLM, the hub), each failure naming its config key; the device only on the machine that runs jobs."""

import importlib.util

import pytest

from grpo_repro import config as cfg
from grpo_repro import preflight
from grpo_repro.preflight import PreflightError, check_at_start, check_device
from tests.helpers import ROOT

PAPER = ROOT / "config" / "paper.yaml"
SMOKE = ROOT / "config" / "smoke.yaml"


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(preflight, "_cuda", lambda: (0, "torch.cuda.is_available() is False"))


@pytest.fixture
def gpu(monkeypatch):
    monkeypatch.setattr(preflight, "_cuda", lambda: (8, "8 CUDA device(s), Test GPU"))
    monkeypatch.setattr(preflight, "_bf16_supported", lambda: True)


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
def hub(monkeypatch):
    """The hub: nothing cached, online; model_info / dataset_info answer or raise (hub.fail)."""
    import huggingface_hub

    class Hub:
        def __init__(self):
            self.fail = None  # an exception to raise, or None: the hub answers
            self.asked = []

        def info(self, repo_id, timeout=None):
            self.asked.append(repo_id)
            if self.fail:
                raise self.fail

    h = Hub()
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda *a, **k: None)
    monkeypatch.setattr(huggingface_hub, "model_info", h.info)
    monkeypatch.setattr(huggingface_hub, "dataset_info", h.info)
    return h


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


def test_cluster_login_node_skips_the_device(no_gpu, hub):
    """A SLURM run loads on a login node without GPUs: only the jobs check the device."""
    check_at_start(paper(), local=False, files=[PAPER])
    with pytest.raises(PreflightError, match="'train.bf16'"):
        check_device({"train": paper()["train"]})  # the job on a node without a GPU


def test_bf16_unsupported_gpu(gpu, monkeypatch, hub):
    monkeypatch.setattr(preflight, "_bf16_supported", lambda: False)
    with pytest.raises(PreflightError, match=r"'train.bf16'.*bf16 support.*Test GPU"):
        check_at_start(paper(), local=True)


def test_paper_config_passes_on_a_gpu_with_the_hub(gpu, hub):
    check_at_start(paper(), local=True, files=[PAPER])
    assert hub.asked == ["Qwen/Qwen2.5-0.5B-Instruct", "openai/gsm8k"]
    check_device({"train": paper()["train"]})


def test_more_training_processes_than_gpus(monkeypatch, hub):
    monkeypatch.setattr(preflight, "_cuda", lambda: (4, "4 CUDA device(s), Test GPU"))
    monkeypatch.setattr(preflight, "_bf16_supported", lambda: True)
    with pytest.raises(PreflightError) as err:
        check_at_start(paper(), local=True, files=[PAPER])  # train.devices: 7
    assert "config key 'train.devices' (" in str(err.value) and "TRAIN_GPUS" in str(err.value)
    with pytest.raises(PreflightError, match=r"'train.devices'.*train.devices <= 4"):
        check_device({"train": paper()["train"]})
    check_device({"train": paper(devices=4)["train"]})


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
    with pytest.raises(PreflightError, match=r"'train.use_vllm'.*vLLM needs a CUDA GPU"):
        check_device({"train": {"bf16": False, "use_vllm": True}})
    with pytest.raises(PreflightError, match=r"'eval.backend'.*vLLM needs a CUDA GPU"):
        check_device({"train": {"bf16": False}, "eval": {"backend": "vllm"}})


def test_unreachable_hub_model_names_the_key(gpu, hub):
    hub.fail = ConnectionError("Failed to resolve 'huggingface.co'")
    with pytest.raises(PreflightError) as err:
        check_at_start(paper(), local=True, files=[PAPER])
    msg = str(err.value)
    assert "config key 'model.name_or_path'" in msg and "Qwen/Qwen2.5-0.5B-Instruct" in msg
    assert "huggingface-cli download" in msg and "ConnectionError" in msg
    assert "config key 'data.gsm8k_train_path'" in msg and "openai/gsm8k" in msg


def test_hub_not_asked_for_cached_local_or_offline(gpu, hub, monkeypatch, tmp_path):
    import huggingface_hub

    hub.fail = ConnectionError("unreachable")
    config = paper()
    config["data"].update(gsm8k_train_path="a.jsonl", gsm8k_test_path="b.jsonl")
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda *a, **k: "/cache/x")
    check_at_start(config, local=True)  # cached model, local data: the hub is not needed
    config["model"]["name_or_path"] = str(tmp_path)
    check_at_start(config, local=True)  # a local directory
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # offline: the cache is checked when loading
    config["model"]["name_or_path"] = "Qwen/Qwen2.5-0.5B-Instruct"
    check_at_start(config, local=True)
    assert hub.asked == []


def test_smoke_and_default_configs_need_nothing(no_gpu, hub):
    hub.fail = ConnectionError("unreachable")
    for path in (SMOKE, ROOT / "config" / "config.yaml"):
        check_at_start(cfg.load(path), local=True)
    assert hub.asked == []


def test_gpu_rule_scripts_check_the_device_before_loading_a_model():
    scripts = ROOT / "workflow" / "scripts"
    for name, load in (
        ("train_grpo.py", "launch("),
        ("evaluate_run.py", "run_eval_job("),
    ):
        text = (scripts / name).read_text()
        assert "check_device(" in text and text.index("check_device(") < text.rindex(load), name
