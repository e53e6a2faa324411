"""Preflight checks of what a run needs beyond its files: the machine (CUDA, bf16, GPU count, vLLM)
and the hub. The smoke configuration (config/smoke.yaml) runs the paper's path on a CPU, so these
are the parts of a paper run (config/paper.yaml) it cannot exercise; they are checked before any
job starts, with errors that name the config key (and file:line), like the configuration's own.

Where each check runs (workflow/rules/common.smk, `on_start`, and the GPU rules' scripts):
  * when a run starts (Snakemake's onstart: the main process, after the workflow has loaded and
    before the first job; never in a dry run, and never inside a cluster job, which runs with
    --no-hooks): the software (vLLM installed) and the hub (model and dataset reachable or
    cached), whatever the executor; the device (CUDA, bf16, GPUs) only when jobs run here,
    i.e. with a local executor (`workflow.local_exec`), since a SLURM login node has no GPU;
  * at the start of train_grpo and the evaluation rules, before any model is loaded: the device,
    on the machine that runs the job (a GPU node under SLURM).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterable
from pathlib import Path

HUB_TIMEOUT_S = 15  # seconds to wait for the hub before calling it unreachable


class PreflightError(ValueError):
    """The machine or the network cannot run this configuration; the message names the key."""


def _cuda() -> tuple[int, str]:
    """(number of usable CUDA devices, what torch says about them)."""
    try:
        import torch
    except ImportError as err:  # pragma: no cover - torch is a requirement
        return 0, f"torch is not importable: {err}"
    if not torch.cuda.is_available():
        return 0, f"torch.cuda.is_available() is False (torch {torch.__version__})"
    n = torch.cuda.device_count()
    return n, f"{n} CUDA device(s), {torch.cuda.get_device_name(0)}"


def _bf16_supported() -> bool:
    import torch

    return bool(torch.cuda.is_bf16_supported())


def _vllm_keys(config: dict) -> list[list[str]]:
    keys = []
    if config.get("train", {}).get("use_vllm"):
        keys.append(["train", "use_vllm"])
    if config.get("eval", {}).get("backend") == "vllm":
        keys.append(["eval", "backend"])
    return keys


def software_errors(config: dict) -> list[tuple[list, str]]:
    """vLLM must be installed where a key asks for it (checkable on a login node: same .venv)."""
    if not _vllm_keys(config) or importlib.util.find_spec("vllm") is not None:
        return []
    return [
        (
            keys,
            "asks for vLLM, which is not installed in this environment: install the GPU "
            "environment (`bash envs/install.sh envs/gpu.txt`, or `pip install vllm`), or set "
            + ("train.use_vllm: false" if keys[0] == "train" else "eval.backend: hf"),
        )
        for keys in _vllm_keys(config)
    ]


def device_errors(config: dict) -> list[tuple[list, str]]:
    """What train.bf16, train.use_vllm, eval.backend and train.devices need of the machine that
    runs the job (train.devices > 1 without CUDA is a CPU run: several processes, no GPU)."""
    wants_bf16 = bool(config.get("train", {}).get("bf16"))
    vllm = _vllm_keys(config)
    devices = int(config.get("train", {}).get("devices", 1))
    if not wants_bf16 and not vllm and devices == 1:
        return []
    cuda, about = _cuda()
    found = []
    if cuda and devices > cuda:
        found.append(
            (
                ["train", "devices"],
                f"{devices} training processes, one per GPU, but this machine has {about}: set "
                f"train.devices <= {cuda}, or ask for more GPUs (TRAIN_GPUS in "
                "workflow/profiles/slurm/config.yaml)",
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
    elif wants_bf16 and not _bf16_supported():
        found.append(
            (
                ["train", "bf16"],
                f"true needs a GPU with bf16 support (Ampere or newer) and this one has none "
                f"({about}): set train.bf16: false",
            )
        )
    found += [
        (keys, f"vLLM needs a CUDA GPU and this machine has none ({about})")
        for keys in vllm
        if not cuda
    ]
    return found


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE") == "1"


def hub_errors(config: dict) -> list[tuple[list, str]]:
    """The hub model and dataset a run downloads are cached or reachable now (online runs; an
    offline run's cache is checked when the workflow loads, grpo_repro.data.sets.check_sources)."""
    from grpo_repro.models import is_local

    found = []
    model = config["model"]["name_or_path"]
    if model is not None and not is_local(model) and not _offline():
        from huggingface_hub import try_to_load_from_cache

        if try_to_load_from_cache(model, "config.json") is None:
            why = _unreachable("model", model)
            if why:
                found.append(
                    (
                        ["model", "name_or_path"],
                        f"the hub model '{model}' is not in the local cache and cannot be "
                        f"fetched ({why}): download it where the hub is reachable "
                        f"(`huggingface-cli download {model} --local-dir models/...`) and set "
                        "model.name_or_path to that directory",
                    )
                )
    data = config["data"]
    missing = [k for k in ("gsm8k_train_path", "gsm8k_test_path") if data[k] is None]
    if data["source"] == "gsm8k" and missing and not _offline():
        why = _unreachable("dataset", data["gsm8k_hub_id"])
        if why:
            found.append(
                (
                    ["data", missing[0]],
                    f"is null, so GSM8K comes from the hub dataset '{data['gsm8k_hub_id']}' "
                    f"(data.gsm8k_hub_id), which cannot be reached ({why}): set "
                    + " and ".join(f"data.{k}" for k in missing)
                    + " to local JSONL files (fields question, answer)",
                )
            )
    return found


def _unreachable(kind: str, repo_id: str) -> str | None:
    """None if the hub answers for `repo_id`, else why not."""
    import huggingface_hub

    info = huggingface_hub.model_info if kind == "model" else huggingface_hub.dataset_info
    try:
        info(repo_id, timeout=HUB_TIMEOUT_S)
    except Exception as err:  # offline, DNS, proxy, 401/404, gated: all mean "cannot fetch"
        return f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}".strip()
    return None


def _raise(errors, files: Iterable[str | Path], config: dict, what: str) -> None:
    if not errors:
        return
    from grpo_repro.config import _dotted, _where

    files = list(files)
    lines = [f"  config key '{_dotted(k)}'{_where(k, files, config)}: {m}" for k, m in errors]
    raise PreflightError(f"{what}:\n" + "\n".join(lines))


def check_at_start(config: dict, local: bool, files: Iterable[str | Path] = ()) -> None:
    """When a run starts (before any job): software and hub always; the device only when the jobs
    run on this machine (`local`: a local executor, not a cluster's)."""
    errors = software_errors(config) + hub_errors(config)
    if local:
        errors += device_errors(config)
    _raise(errors, files, config, "this run cannot start")


def check_device(config: dict) -> None:
    """At the start of a GPU rule's job, before any model is loaded: the device it needs.
    `config` holds the keys it sets (train.bf16, train.use_vllm, eval.backend), all optional."""
    _raise(software_errors(config) + device_errors(config), [], config, "this job cannot run here")
