"""grpo_repro.gpus: how many GPUs a configuration's jobs ask for (uses_gpu, train_gpus, job_gpus,
requested) and the device allocator's locks within one process (acquire)."""

from __future__ import annotations

import os

import pytest

from grpo_repro import gpus


def _config(**train):
    base = {"devices": 1, "bf16": False, "use_vllm": False}
    return {"train": {**base, **train}, "eval": {"backend": "hf"}}


@pytest.mark.parametrize(
    ("config", "want"),
    [
        (_config(), False),
        (_config(devices=4), False),  # several processes on the CPU (gloo)
        (_config(bf16=True), True),
        (_config(use_vllm=True), True),
        ({**_config(), "eval": {"backend": "vllm"}}, True),
    ],
)
def test_uses_gpu(config, want):
    assert gpus.uses_gpu(config) is want


@pytest.mark.parametrize(
    ("train", "want"),
    [
        ({"devices": 7}, 7),  # no vllm_mode key: colocate
        ({"devices": 7, "bf16": True}, 7),
        ({"devices": 7, "use_vllm": True, "vllm_mode": "colocate"}, 7),
        ({"devices": 7, "use_vllm": True}, 7),
        ({"devices": 7, "use_vllm": True, "vllm_mode": "server"}, 8),  # the server's own GPU
        ({"devices": 1, "use_vllm": True, "vllm_mode": "server"}, 2),
        ({"devices": 7, "use_vllm": False, "vllm_mode": "server"}, 7),  # no vLLM, no server
    ],
)
def test_train_gpus(train, want):
    assert gpus.train_gpus({"train": train}) == want


def test_job_gpus():
    cpu = _config(devices=3)
    assert {k: gpus.job_gpus(cpu, k) for k in gpus.JOB_KINDS} == dict.fromkeys(gpus.JOB_KINDS, 0)
    paper = _config(devices=7, bf16=True, use_vllm=True, vllm_mode="server")
    assert {k: gpus.job_gpus(paper, k) for k in gpus.JOB_KINDS} == {
        "train": 8,
        "sft": 1,
        "eval": 1,
        "kl": 1,
    }
    with pytest.raises(ValueError, match="unknown kind"):
        gpus.job_gpus(paper, "training")


def test_requested_reads_a_missing_resource_as_zero():
    from snakemake.iocontainers import ResourceList  # a script's snakemake.resources

    assert gpus.requested(ResourceList(fromdict={"gpu": 2, "mem_mb": 10})) == 2
    assert gpus.requested(ResourceList(fromdict={"mem_mb": 10})) == 0
    assert gpus.requested({}) == 0


def test_acquire_holds_distinct_devices(tmp_path, monkeypatch):
    monkeypatch.setenv(gpus.DEVICES_ENV, "0,1,2")
    monkeypatch.setenv(gpus.LOCK_ENV, str(tmp_path))
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with gpus.acquire(0) as none:
        assert none == [] and "CUDA_VISIBLE_DEVICES" not in os.environ
    with gpus.acquire(2) as first:
        assert first == ["0", "1"] and os.environ["CUDA_VISIBLE_DEVICES"] == "0,1"
        busy = pytest.raises(gpus.GPUError, match="no 2 free GPU")  # only "2" is free
        with busy, gpus.acquire(2, wait_s=0.2, poll_s=0.05):
            pass
        with gpus.acquire(1) as second:
            assert second == ["2"] and os.environ["CUDA_VISIBLE_DEVICES"] == "2"
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert "CUDA_VISIBLE_DEVICES" not in os.environ
    with gpus.acquire(3) as again:  # every lock was released
        assert again == ["0", "1", "2"]
    with pytest.raises(gpus.GPUError, match="asks for 4 GPU"), gpus.acquire(4):
        pass


def test_require_fails_a_job_with_too_few_gpus():
    gpus.require(0, 0)
    gpus.require(8, 8)
    gpus.require(8, 7)  # a profile may give more than the need
    with pytest.raises(gpus.GPUError, match="got 4 GPU.*needs 8"):
        gpus.require(4, 8)  # Snakemake lowered the job's gpu to --resources gpu=4


def test_workflows_in_two_directories_see_each_others_locks(tmp_path, monkeypatch):
    """The default lock folder is the node's, not the working directory's: a workflow started
    elsewhere (another checkout, `-d DIR`) finds the devices another one holds busy."""
    import subprocess
    import sys
    import tempfile

    monkeypatch.setenv(gpus.DEVICES_ENV, "0")
    monkeypatch.delenv(gpus.LOCK_ENV, raising=False)
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "node_tmp"))  # this node's /tmp
    (tmp_path / "node_tmp").mkdir()
    monkeypatch.chdir(tmp_path)
    other = tmp_path / "other_workflow"
    other.mkdir()
    probe = (
        "import tempfile, sys; tempfile.tempdir = sys.argv[1]\n"
        "from grpo_repro import gpus\n"
        "try:\n    with gpus.acquire(1, wait_s=0.2, poll_s=0.05): print('GOT')\n"
        "except gpus.GPUError: print('BUSY')\n"
    )
    run = [sys.executable, "-c", probe, str(tmp_path / "node_tmp")]
    with gpus.acquire(1) as held:
        assert held == ["0"] and gpus.lock_dir().is_relative_to(tmp_path / "node_tmp")
        out = subprocess.run(run, cwd=other, capture_output=True, text=True, timeout=60)
        assert out.stdout.strip() == "BUSY", out.stderr
    out = subprocess.run(run, cwd=other, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "GOT", out.stderr


def test_the_gpu_node_profile_survives_a_failed_job():
    """One failed job on the GPU node stops only what depends on it, and is tried once more."""
    import yaml

    from tests.helpers import ROOT

    profile = yaml.safe_load((ROOT / "workflow/profiles/gpu_node/config.yaml").read_text())
    assert profile["keep-going"] is True and profile["retries"] >= 1
    assert profile["rerun-incomplete"] is True
