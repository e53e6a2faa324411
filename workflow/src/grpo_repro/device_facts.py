"""The device probe's facts (grpo_repro.preflight, `probe`): what torch says about CUDA here and
the NVIDIA driver's version, printed as JSON by the probe's child (`python -m grpo_repro.preflight
--probe`), and why CUDA is unavailable when it is (`no_cuda`: a CPU build of torch, no driver, or a
driver too old for torch's CUDA build)."""

from __future__ import annotations

import re
from pathlib import Path

PROBE_TIMEOUT_S = 120  # seconds for the device probe's child (importing torch, CUDA start-up)
# the oldest NVIDIA driver (major version) that runs each CUDA major version's torch wheels
DRIVER_FOR_CUDA = {13: 580, 12: 525}


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
    what to do (a CUDA build of torch; a driver new enough for it, or torch built for CUDA 12)."""
    if "error" in found:
        return found["error"]
    torch_v, build, driver = found.get("torch"), found.get("cuda_build"), found.get("driver")
    head = f"torch.cuda.is_available() is False (torch {torch_v}"
    seen = f"NVIDIA driver {driver}" if driver else "no NVIDIA driver found"
    if build is None:
        return (
            f"{head}, a CPU build: torch.version.cuda is None; {seen}): install a CUDA build of "
            "torch (see README, GPU section)"
        )
    major = int(str(build).split(".")[0])
    need = DRIVER_FOR_CUDA.get(major)
    if driver is None:
        return (
            f"{head}, CUDA {build} build; {seen}): run on a machine with an NVIDIA GPU and driver"
        )
    if need and int(driver.split(".")[0]) < need:
        older = ", or install torch built for CUDA 12" if major > 12 else ""
        return (
            f"{head}, CUDA {build} build; {seen}): CUDA {major} wheels need NVIDIA driver "
            f">= {need}: update the driver{older} (see README, GPU section)"
        )
    return (
        f"{head}, CUDA {build} build; {seen}): check the GPU (nvidia-smi) and CUDA_VISIBLE_DEVICES"
    )
