"""The device probe's facts (grpo_repro.preflight, `probe`): what torch says about CUDA here and
the NVIDIA driver's version, printed as JSON by the probe's child (`python -m grpo_repro.preflight
--probe`), why CUDA is unavailable when it is (`no_cuda`: a CPU build of torch, no driver, or a
driver too old for torch's CUDA build), and whether the driver runs the pinned GPU stack
(`old_driver`)."""

from __future__ import annotations

import re
from pathlib import Path

PROBE_TIMEOUT_S = 120  # seconds for the device probe's child (importing torch, CUDA start-up)
# the oldest NVIDIA driver (major version) that runs each CUDA major version's torch wheels
DRIVER_FOR_CUDA = {13: 580, 12: 525}
#: the oldest NVIDIA driver of the pinned GPU stack (envs/gpu.txt): PyPI's torch 2.13 and vLLM 0.30
#: are CUDA 13 builds (vLLM's wheel also needs torch==2.13.0 and cu13 kernels), so a torch built for
#: CUDA 12 under it leaves vLLM unable to load: there is no second pin set for older drivers
STACK_DRIVER = DRIVER_FOR_CUDA[13]
STACK = "the pinned GPU stack (envs/gpu.txt: torch 2.13 and vLLM 0.30, CUDA 13 builds)"


def driver_major(driver: str | None) -> int | None:
    """The major version of a driver version string ("580.65.06" -> 580), None if unknown."""
    try:
        return int(str(driver).split(".")[0])
    except ValueError:
        return None


def old_driver(found: dict) -> str | None:
    """Why the probed machine cannot run the pinned GPU stack (its NVIDIA driver older than
    STACK_DRIVER), None when the driver is new enough or unknown."""
    major = driver_major(found.get("driver"))
    if major is None or major >= STACK_DRIVER:
        return None
    return (
        f"{STACK} needs NVIDIA driver >= {STACK_DRIVER}, and this machine has driver "
        f"{found['driver']}: run on a node with driver >= {STACK_DRIVER} (nvidia-smi prints it)"
    )


def facts() -> dict:
    """What torch says about CUDA here (count, name, bf16, torch, cuda_build) and the NVIDIA driver
    version; this initialises CUDA, so it runs in the probe's child (`probe`)."""
    found = {"count": 0, "driver": driver_version()}
    try:
        import torch
    except ImportError as err:  # pragma: no cover - torch is a requirement
        return {**found, "error": f"torch is not importable: {err}"}
    found.update(torch=torch.__version__, cuda_build=torch.version.cuda)
    if torch.cuda.is_available():
        found.update(
            count=torch.cuda.device_count(),
            name=torch.cuda.get_device_name(0),
            bf16=bool(torch.cuda.is_bf16_supported()),
        )
    return found


def driver_version() -> str | None:
    """The NVIDIA driver's version (nvidia-smi, else /proc/driver/nvidia/version), None if none."""
    import subprocess

    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
        )
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.split()[0]
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        return proc_driver(Path("/proc/driver/nvidia/version").read_text())
    except OSError:
        return None


def proc_driver(text: str) -> str | None:
    """The driver version in /proc/driver/nvidia/version's text ("... Kernel Module  580.65.06 ...")."""
    match = re.search(r"Kernel Module\s+(?:for \S+\s+)?(\d+(?:\.\d+)+)", text)
    return match.group(1) if match else None


def no_cuda(found: dict) -> str:
    """Why CUDA is unavailable, from the probe's facts: torch's CUDA build, the driver found, and
    what to do (a CUDA build of torch; a driver new enough for it)."""
    if "error" in found:
        return found["error"]
    torch_v, build, driver = found.get("torch"), found.get("cuda_build"), found.get("driver")
    head = f"torch.cuda.is_available() is False (torch {torch_v}"
    seen = f"NVIDIA driver {driver}" if driver else "no NVIDIA driver found"
    if build is None:
        return (
            f"{head}, a CPU build: torch.version.cuda is None; {seen}): install the GPU "
            "environment (`bash envs/install.sh envs/gpu.txt`, docs/gpu.md)"
        )
    major = int(str(build).split(".")[0])
    need = DRIVER_FOR_CUDA.get(major)
    if driver is None:
        return (
            f"{head}, CUDA {build} build; {seen}): run on a machine with an NVIDIA GPU and driver"
        )
    if need and int(driver.split(".")[0]) < need:
        return (
            f"{head}, CUDA {build} build; {seen}): CUDA {major} wheels need NVIDIA driver "
            f">= {need}: update the driver, or run on a node that has it (docs/gpu.md)"
        )
    return (
        f"{head}, CUDA {build} build; {seen}): check the GPU (nvidia-smi) and CUDA_VISIBLE_DEVICES"
    )
