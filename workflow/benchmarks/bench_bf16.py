"""Benchmark: bf16 autocast on the CPU (AVX512-BF16 / AMX) against float32, for the organism's SFT
step and for evaluation sampling, interleaved rounds in one process, one thread: ms per SFT step
and sampled tokens/s, each ratio per round and overall, and the SFT losses side by side.

    python workflow/benchmarks/bench_bf16.py [--rounds 2] [--steps 12] [--ref DIR]

SFT starts from a fresh organism model on the pipeline's SFT set (train_harness.prepared_data);
sampling uses pi_ref (--ref, default the pipeline's results/train/ref/model or the harness's
cached one) on 64 test prompts x 50 samples at T = 1.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train_harness as H


def sft_ms(tok, records, org, steps, bf16):
    from grpo_repro.train import sft

    model = sft.organism_model(tok, org, seed=0)
    t0 = time.perf_counter()
    log = sft.train_reference(
        records,
        [r["prompt"] for r in records],
        tok,
        model,
        tempfile.mkdtemp(),
        steps,
        org["sft_batch"],
        org["sft_lr"],
        0,
        1,
        bf16=bf16,
    )
    return 1000 * (time.perf_counter() - t0) / steps, [r["loss"] for r in log]


def sample_tok_s(model, tok, prompts, bf16):
    import torch

    from grpo_repro.sampler.hf import HFSampler
    from grpo_repro.sampler.params import SamplingParams

    s = HFSampler(model, tok, batch_prompts=32)
    ctx = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
    t0 = time.perf_counter()
    with ctx:
        out = s.sample(
            prompts, 50, SamplingParams(1.0, max_new_tokens=24), list(range(len(prompts)))
        )
    return out.n_tokens / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--ref", default=None)
    a = ap.parse_args()
    import torch

    from grpo_repro.data.sets import read_prompts
    from grpo_repro.models import load_policy, load_tokenizer

    torch.set_num_threads(1)
    org = H.load_config()["organism"]
    data = H.prepared_data()
    tok = load_tokenizer(data["tokenizer"])
    sft_set = read_prompts(data["sft"])
    records = random.Random(0).sample(sft_set, min(2048, len(sft_set)))
    ref = a.ref or (
        "results/train/ref/model"
        if Path("results/train/ref/model").exists()
        else str(H.cached_ref())
    )
    model, rtok = load_policy(ref)
    prompts = [r["prompt"] for r in read_prompts(data["test"])[:64]]
    res = {"sft": {False: [], True: []}, "sample": {False: [], True: []}}
    losses = {}
    for r in range(a.rounds):
        for bf16 in (False, True):
            ms, losses[bf16] = sft_ms(tok, records, org, a.steps, bf16)
            res["sft"][bf16].append(ms)
            res["sample"][bf16].append(sample_tok_s(model, rtok, prompts, bf16))
        print(
            f"round {r}: SFT {res['sft'][False][-1]:.0f} vs {res['sft'][True][-1]:.0f} ms/step "
            f"(fp32 vs bf16), sampling {res['sample'][False][-1]:.0f} vs "
            f"{res['sample'][True][-1]:.0f} tokens/s"
        )
    sft_ratio = sum(res["sft"][False]) / sum(res["sft"][True])
    smp_ratio = sum(res["sample"][True]) / sum(res["sample"][False])
    print(f"SFT speed-up bf16/fp32: {sft_ratio:.2f}x; sampling speed-up: {smp_ratio:.2f}x")
    print(f"SFT losses fp32: {[round(x, 3) for x in losses[False]]}")
    print(f"SFT losses bf16: {[round(x, 3) for x in losses[True]]}")


if __name__ == "__main__":
    main()
