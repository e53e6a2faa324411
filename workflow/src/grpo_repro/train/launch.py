"""Launching GRPO training (the rule train_grpo, Sec. 6): in this process on one device, or under
`accelerate launch` with one process per device (train.devices; the paper: 7 GPUs), each process
running this module's command line (`python -m grpo_repro.train.launch`).

`accelerate launch` gets every setting on its command line and a configuration file of its own
(`accelerate_config`), so a user's default accelerate configuration (`accelerate config`,
~/.cache/huggingface/accelerate/default_config.yaml) never chooses devices, machines, precision or
the port: accelerate reads that default file only when no --config_file is given
(accelerate.commands.launch._validate_launch_command). Each launch rendezvouses on a port free at
that moment (grpo_repro.gpus.free_port), so simultaneous jobs never race for accelerate's 29500.

The paper's layout (train.vllm_mode server, with train.use_vllm): the job holds train.devices + 1
GPUs; the last one runs the vLLM server (grpo_repro.train.vllm_server.serve) for the whole run and
the first train.devices ones the training processes.

The run's settings travel as one object (grpo_repro.train.run_settings.GRPORun): the in-process
run gets it, launched processes its JSON (`--run-json`, runtime fields included); the server's
address is put on it here (dataclasses.replace), never in its result-relevant fields.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import yaml

from grpo_repro.gpus import free_port
from grpo_repro.train.args import uses_server
from grpo_repro.train.grpo import run as run_grpo
from grpo_repro.train.run_settings import GRPORun

SERVER_LOG = "vllm_server.log"  # the vLLM server's output, in the run's directory
ACCEL_FILE = "accelerate_config.yaml"  # accelerate_config's file, in a temporary directory


def accelerate_config(
    devices: int, port: int, gpu_ids: list[str] | None = None, bf16: bool = False
) -> dict:
    """accelerate's configuration file of a one-node launch of `devices` processes (the fields of
    accelerate.commands.config.config_args.ClusterConfig), every field stated."""
    return {
        "compute_environment": "LOCAL_MACHINE",
        "distributed_type": "MULTI_GPU",  # torchrun, one process per device (also on a CPU host)
        "num_processes": int(devices),
        "num_machines": 1,
        "machine_rank": 0,
        "gpu_ids": ",".join(gpu_ids) if gpu_ids else "all",
        "main_process_ip": None,
        "main_process_port": int(port),
        "rdzv_backend": "static",
        "same_network": True,
        "main_training_function": "main",
        "mixed_precision": "bf16" if bf16 else "no",
        "downcast_bf16": False,
        "use_cpu": False,
        "debug": False,
        "enable_cpu_affinity": False,
        "dynamo_config": {},
    }


def command(
    devices: int,
    args: dict,
    gpu_ids: list[str] | None = None,
    port: int | None = None,
    bf16: bool = False,
    config_file: str | Path | None = None,
) -> list[str]:
    """The command of a run in its own processes: `accelerate launch` of `devices` processes with
    every setting explicit (`config_file`: accelerate_config's file; port: the rendezvous port,
    default a free one), or for devices == 1 this module's command line alone."""
    cli = [f"--{k.replace('_', '-')}={v}" for k, v in args.items()]
    module = ["-m", "grpo_repro.train.launch", *cli]
    if devices == 1:
        return [sys.executable, *module]
    if config_file is None:
        raise ValueError("a multi-process launch needs accelerate_config's file (config_file)")
    return [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--config_file",  # ours: accelerate never reads the user's default configuration
        str(config_file),
        "--multi_gpu",  # torchrun, one process per device; without it a CPU-only host runs one
        "--num_machines",
        "1",
        "--machine_rank",
        "0",
        "--num_processes",
        str(devices),
        *(["--gpu_ids", ",".join(gpu_ids)] if gpu_ids else []),
        "--main_process_port",
        str(port or free_port()),
        "--mixed_precision",
        "bf16" if bf16 else "no",
        "--dynamo_backend",
        "no",
        *module,
    ]


def _layout(train: dict, gpu_ids: list[str] | None) -> tuple[list[str] | None, str | None]:
    """(the training processes' devices, the vLLM server's device or None): in vllm_mode server
    the job's last device serves and the first train.devices train (module docstring)."""
    devices = int(train["devices"])
    if not uses_server(train):
        if gpu_ids and len(gpu_ids) != devices:
            raise ValueError(
                f"the job holds GPUs {gpu_ids} for train.devices={devices} training processes"
            )
        return gpu_ids, None
    if not gpu_ids:  # the job's devices: CUDA_VISIBLE_DEVICES, else the node's first ones
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        gpu_ids = visible.split(",") if visible else [str(i) for i in range(devices + 1)]
    if len(gpu_ids) != devices + 1:
        raise ValueError(
            f"train.vllm_mode server needs train.devices + 1 = {devices + 1} GPUs (one serves "
            f"vLLM), the job holds {gpu_ids}"
        )
    return gpu_ids[:devices], gpu_ids[devices]


def launch(
    run: GRPORun,
    ref: str,
    prompts: str,
    n_epoch_prompts: int,
    out: str,
    run_json: str,
    threads: int = 1,
    gpu_ids: list[str] | None = None,
) -> None:
    """Train `run` (run.json written at `run_json`): in this process when train.devices is 1 and
    no vLLM server runs, else in processes of its own (`command`). gpu_ids: the physical devices
    the job holds (None or [] on a CPU; CUDA_VISIBLE_DEVICES already names them). The tracker is
    the run's runtime field report_to. In vllm_mode server the job's vLLM server runs for the
    whole body, its address put on the run (runtime fields: never in the fingerprint)."""
    train = run.sections["train"]
    devices = int(train["devices"])
    train_ids, server_gpu = _layout(train, list(gpu_ids or []) or None)
    if devices == 1 and server_gpu is None:
        # the in-process rendezvous (accelerate's state, a colocated vLLM engine's group) on a port
        # free now: accelerate's fixed 29500 would collide with a simultaneous job's
        os.environ.setdefault("MASTER_PORT", str(free_port()))
        run_grpo(run, ref, prompts, n_epoch_prompts, out, run_json, threads)
        return
    with contextlib.ExitStack() as stack:
        if server_gpu is not None:
            url, port = stack.enter_context(_server(train, ref, out, server_gpu))
            run = dataclasses.replace(run, server_url=url, group_port=port)
        args = {
            "ref": ref,
            "prompts": prompts,
            "n_epoch_prompts": n_epoch_prompts,
            "out": out,
            "run": run_json,
            "threads": threads,
            "run_json": run.to_json(),  # the run's settings and runtime fields
        }
        port, config_file = None, None
        if devices > 1:
            port = free_port()
            config_file = Path(stack.enter_context(tempfile.TemporaryDirectory()), ACCEL_FILE)
            accel = accelerate_config(devices, port, train_ids, bool(train["bf16"]))
            config_file.write_text(yaml.safe_dump(accel, sort_keys=False))
        cmd = command(devices, args, train_ids, port, bool(train["bf16"]), config_file)
        env = launch_env(os.environ)
        if train_ids:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(train_ids)  # never the server's device
        sys.stdout.flush()
        run_processes(cmd, env)


def launch_env(environ) -> dict:
    """The training processes' environment: this job's, less a user's ACCELERATE_* variables,
    which `accelerate launch` would read over the settings on its command line (mixed precision,
    the device layout, dynamo): every launch setting comes from `command` alone."""
    return {k: v for k, v in environ.items() if not k.startswith("ACCELERATE_")}


def run_processes(cmd: list[str], env: dict, grace_s: float = 60.0) -> None:
    """Run the training processes' command to its end (CalledProcessError on a failure). When
    this process is interrupted (KeyboardInterrupt, or SIGTERM while vllm_server.serve runs) the
    launcher gets SIGTERM, on which torchrun's agent ends its workers, and SIGKILL after
    `grace_s` seconds."""
    proc = subprocess.Popen(cmd, stdout=sys.stdout, stderr=sys.stderr, env=env)
    try:
        rc = proc.wait()
    except BaseException:
        proc.terminate()
        try:
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
    if rc:
        raise subprocess.CalledProcessError(rc, cmd)


@contextlib.contextmanager
def _server(train, ref: str, out: str, gpu: str) -> Iterator[tuple[str, int]]:
    """The job's vLLM server on device `gpu` for the body (vllm_server.serve: pi_ref's weights,
    in the dtype of the rollouts, grpo_repro.models.rollout_dtype); yields the run's runtime
    fields server_url and group_port (its base URL, a free port for TRL's weight-sync group)."""
    from grpo_repro.hub import local_dir
    from grpo_repro.models import rollout_dtype
    from grpo_repro.train import vllm_server

    log = Path(out) / SERVER_LOG
    # a hub spec's cached snapshot: the server loads the pinned files, never the hub
    with vllm_server.serve(str(local_dir(ref)), gpu, log, rollout_dtype(train)) as url:
        server_port = int(url.rsplit(":", 1)[1])
        group_port = free_port()
        while group_port == server_port:
            group_port = free_port()
        yield url, group_port


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ref", required=True, help="pi_ref: local directory or hub spec id@revision")
    ap.add_argument("--prompts", required=True, help="JSONL of records with prompt and gold")
    ap.add_argument("--n-epoch-prompts", type=int, required=True, help="prompts in one epoch")
    ap.add_argument("--out", required=True, help="results/train/<variant>/seed_<seed>")
    ap.add_argument(
        "--run-json", required=True, help="the run's settings (GRPORun.to_json, runtime included)"
    )
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--run", required=True, help="run.json written on success")
    a = ap.parse_args(argv)
    run_grpo(
        GRPORun.from_json(a.run_json),
        a.ref,
        a.prompts,
        a.n_epoch_prompts,
        a.out,
        a.run,
        a.threads,
    )


if __name__ == "__main__":
    main()
