"""The device probe of the preflight checks (grpo_repro.preflight: probe, facts):
this machine's facts from a child process, a failed probe named, why CUDA is unavailable said in
words, the driver version read from /proc."""

import pytest

from grpo_repro import preflight
from grpo_repro.preflight import PreflightError, check_device


def test_the_real_probe_reports_this_machine():
    """`python -m grpo_repro.preflight --probe` prints torch's CUDA build and the driver found."""
    import torch

    found = preflight.probe()
    assert "error" not in found, found
    assert found["torch"] == torch.__version__ and found["cuda_build"] == torch.version.cuda
    assert found["count"] == (torch.cuda.device_count() if torch.cuda.is_available() else 0)
    assert "driver" in found and not torch.cuda.is_initialized()


def test_a_failed_probe_is_named(monkeypatch):
    monkeypatch.setattr(preflight, "PROBE_ARGS", ("-c", "import sys; sys.exit('no torch here')"))
    with pytest.raises(PreflightError, match=r"'train.bf16'.*device probe.*no torch here"):
        check_device({"train": {"bf16": True}})


@pytest.mark.parametrize(
    "facts, said",
    [
        (  # a CUDA 13 wheel on an R550 driver
            {"torch": "2.13.0", "cuda_build": "13.0", "driver": "550.127.05"},
            ["CUDA 13.0 build", "NVIDIA driver 550.127.05", ">= 580", "update the driver"],
        ),
        (  # a CUDA 12 wheel on an R470 driver: the driver
            {"torch": "2.13.0", "cuda_build": "12.8", "driver": "470.82"},
            ["CUDA 12.8 build", "NVIDIA driver 470.82", ">= 525", "docs/gpu.md"],
        ),
        (  # no driver
            {"torch": "2.13.0", "cuda_build": "13.0", "driver": None},
            ["CUDA 13.0 build", "no NVIDIA driver found"],
        ),
        (  # a CPU build of torch
            {"torch": "2.13.0+cpu", "cuda_build": None, "driver": "580.65.06"},
            ["CPU build", "torch.version.cuda is None", "NVIDIA driver 580.65.06", "envs/gpu.txt"],
        ),
        (  # a driver new enough: look at the GPU
            {"torch": "2.13.0", "cuda_build": "13.0", "driver": "580.65.06"},
            ["CUDA 13.0 build", "NVIDIA driver 580.65.06", "CUDA_VISIBLE_DEVICES"],
        ),
    ],
)
def test_why_cuda_is_unavailable(facts, said):
    msg = preflight.no_cuda({"count": 0, **facts})
    assert msg.startswith("torch.cuda.is_available() is False (torch " + facts["torch"])
    for part in said:
        assert part in msg, (part, msg)
    assert "torch built for CUDA 12" not in msg  # vLLM 0.30's CUDA 13 kernels would not load


def test_the_reason_reaches_the_error(monkeypatch):
    old = {"count": 0, "torch": "2.13.0", "cuda_build": "13.0", "driver": "550.127.05"}
    monkeypatch.setattr(preflight, "probe", lambda: old)
    with pytest.raises(PreflightError, match=r"'train.bf16'.*550.127.05.*>= 580"):
        check_device({"train": {"bf16": True}})


def test_driver_version_from_proc():
    text = (
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build  "
        "(dvs-builder@U16-I3-B03-4-3)  Tue Jul 22 2025\nGCC version:  gcc version 13.3.0\n"
    )
    assert preflight.proc_driver(text) == "580.65.06"
    legacy = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.127.05  Tue Oct 22 2024\n"
    assert preflight.proc_driver(legacy) == "550.127.05"
    assert preflight.proc_driver("") is None
