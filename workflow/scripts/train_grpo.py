"""Stage 3c: GRPO training of one variant with TRL (Sec. 6). A standalone CLI so that the rule can
run it under `accelerate launch --num_processes N` on several GPUs, or with plain python."""

import argparse
import json
import os
import time

from grpo_repro import gsm8k, provenance
from grpo_repro.schedule import checkpoint_steps
from grpo_repro.train_grpo import train


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--variant", required=True)
    ap.add_argument("--ref", required=True, help="pi_ref: local directory or hub id")
    ap.add_argument("--prompts", required=True, help="JSONL of records with prompt and gold")
    ap.add_argument("--n-epoch-prompts", type=int, required=True, help="prompts in one epoch (schedule)")
    ap.add_argument("--out", required=True, help="results/train/<variant>")
    ap.add_argument("--config-json", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--run", required=True, help="run.json written on success")
    a = ap.parse_args()
    config = json.loads(a.config_json)
    devices = int(os.environ.get("WORLD_SIZE", "1"))
    use_cpu = config["train"]["devices"] == 1 and not _cuda()
    if use_cpu:
        import torch

        torch.set_num_threads(a.threads)
    records = gsm8k.read_jsonl(a.prompts)
    steps = checkpoint_steps(config["train"], a.n_epoch_prompts)
    t0 = time.time()
    summary = train(config, a.variant, a.ref, records, a.out, steps, devices=devices, use_cpu=use_cpu)
    summary["seconds"] = time.time() - t0
    summary["seconds_per_step"] = summary["seconds"] / max(1, steps[-1])
    if int(os.environ.get("RANK", "0")) == 0:
        provenance.write_json(a.run, {"stage": "train_grpo", **summary,
                                      **provenance.record(config, inputs=[a.prompts])})
    print(json.dumps({k: summary[k] for k in ("variant", "steps", "seconds", "seconds_per_step")}))


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


if __name__ == "__main__":
    main()
