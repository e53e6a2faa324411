"""Launching GRPO training (the rule train_grpo, Sec. 6): in this process on one device, or under
`accelerate launch` with one process per device (train.devices; the paper: 7 GPUs), each process
running this module's command line (`python -m grpo_repro.train.launch`)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from grpo_repro.train.grpo import run


def command(devices: int, args: dict) -> list[str]:
    """The `accelerate launch` command of a multi-process run (one process per device)."""
    cli = [f"--{k.replace('_', '-')}={v}" for k, v in args.items()]
    return [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",  # torchrun, one process per device; without it a CPU-only host runs one
        "--num_processes",
        str(devices),
        "-m",
        "grpo_repro.train.launch",
        *cli,
    ]


def launch(
    config: dict,
    variant: str,
    seed: int,
    ref: str,
    prompts: str,
    n_epoch_prompts: int,
    out: str,
    run_json: str,
    threads: int = 1,
) -> None:
    """Train (`variant`, `seed`): in this process when train.devices is 1, else under accelerate
    launch with one process per device."""
    devices = int(config["train"]["devices"])
    if devices == 1:
        run(config, variant, seed, ref, prompts, n_epoch_prompts, out, run_json, threads)
        return
    args = {
        "variant": variant,
        "seed": seed,
        "ref": ref,
        "prompts": prompts,
        "n_epoch_prompts": n_epoch_prompts,
        "out": out,
        "run": run_json,
        "threads": threads,
        "config_json": json.dumps(config),
    }
    sys.stdout.flush()
    subprocess.run(command(devices, args), check=True, stdout=sys.stdout, stderr=sys.stderr)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--variant", required=True)
    ap.add_argument("--seed", type=int, required=True, help="GRPO seed (train.seeds)")
    ap.add_argument("--ref", required=True, help="pi_ref: local directory or hub id")
    ap.add_argument("--prompts", required=True, help="JSONL of records with prompt and gold")
    ap.add_argument("--n-epoch-prompts", type=int, required=True, help="prompts in one epoch")
    ap.add_argument("--out", required=True, help="results/train/<variant>/seed_<seed>")
    ap.add_argument(
        "--config-json", required=True, help="the configuration sections training reads"
    )
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--run", required=True, help="run.json written on success")
    a = ap.parse_args(argv)
    run(
        json.loads(a.config_json),
        a.variant,
        a.seed,
        a.ref,
        a.prompts,
        a.n_epoch_prompts,
        a.out,
        a.run,
        a.threads,
    )


if __name__ == "__main__":
    main()
