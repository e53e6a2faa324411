"""Benchmark of the reference policy's SFT (train stage, rule train_reference; Sec. 6 organism):
the pipeline's own SFT (grpo_repro.train.sft.train_reference, its SFTConfig) with TRL's fused LM
head on every position vs grpo_repro.train.sft.compact_lm_head (completion positions only),
interleaved in rounds in one process, one thread: ms/step, real and padded tokens/s, the speed-up
per round and overall, the same loss; the fp32 matmul FLOP ceiling at 1 thread on the model's
shapes, the achieved FLOP rate and the padding waste of the batches.

    python workflow/benchmarks/bench_sft.py [--rounds 2] [--steps 15] [--sft-records 4096] [--ref DIR]

(also `bench_train.py sft`). Each run starts from a fresh organism model (train_reference's
starting point) on --sft-records records of the pipeline's SFT set, tokenized with the pipeline's
tokenizer (both as the rule data_prepare writes them: train_harness.prepared_data; --ref DIR:
that model's tokenizer instead).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train_harness as H


def sft_run(tok, records, org, steps, compact):
    """One run of the pipeline's SFT (train_reference, its SFTConfig) from a fresh organism model,
    with TRL's head on every position (compact=False) or compact_lm_head: per-step seconds (after 3
    warm-up steps), per-step token counts (padded, real, completion), per-step losses."""
    import contextlib
    import tempfile

    import trl
    from transformers import TrainerCallback

    from grpo_repro.train import sft

    steps_t, counts, losses, t = [], [], [], {"last": None}

    class Timer(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            now = time.perf_counter()
            if t["last"] is not None:
                steps_t.append(now - t["last"])
            t["last"] = now

        def on_train_end(self, args, state, control, **kw):
            steps_t.append(time.perf_counter() - t["last"])

    class Counted(trl.SFTTrainer):
        def __init__(self, *x, **kw):
            super().__init__(*x, callbacks=[Timer()], **kw)

        def compute_loss(self, model, inputs, *x, **kw):
            m = inputs["attention_mask"]
            counts.append((m.numel(), int(m.sum()), int((inputs["labels"] != -100).sum())))
            out = super().compute_loss(model, inputs, *x, **kw)
            losses.append(float((out[0] if isinstance(out, tuple) else out).detach()))
            return out

    model = sft.organism_model(tok, org, seed=0)  # the pipeline's pi_ref before SFT
    orig_trainer, orig_head = trl.SFTTrainer, sft.compact_lm_head
    trl.SFTTrainer = Counted  # train_reference imports it from trl at call time
    if not compact:
        sft.compact_lm_head = contextlib.nullcontext
    try:
        sft.train_reference(
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
        )
    finally:
        trl.SFTTrainer, sft.compact_lm_head = orig_trainer, orig_head
    return steps_t[3:], counts[3:], losses, model


def cmd_sft(a):
    """SFT step time and tokens/s, TRL's every-position head vs compact_lm_head, interleaved."""
    import random

    from grpo_repro.data.sets import read_prompts
    from grpo_repro.models import load_tokenizer

    org = H.load_config()["organism"]
    data = H.prepared_data()  # the SFT set and tokenizer of the rule data_prepare
    tok = load_tokenizer(a.ref or data["tokenizer"])
    print(f"tokenizer: {a.ref or data['tokenizer']}; SFT records: {data['sft']}")
    sft_set = read_prompts(data["sft"])
    records = random.Random(0).sample(sft_set, min(a.sft_records, len(sft_set)))
    res = {"trl_head": [], "compact": []}
    model = None
    for r in range(a.rounds):
        for kind in res:
            st, counts, losses, model = sft_run(tok, records, org, a.steps, kind == "compact")
            res[kind].append((statistics.fmean(st), counts, losses))
            real = statistics.fmean(c[1] for c in counts)
            print(
                f"round {r} {kind:9s} {1000 * res[kind][-1][0]:.0f} ms/step, "
                f"{real / res[kind][-1][0]:.0f} real tokens/s",
                flush=True,
            )
    counts = [c for _, cs, _ in res["trl_head"] for c in cs]
    padded, real, compl = (statistics.fmean(c[i] for c in counts) for i in range(3))
    hidden, vocab = org["hidden"], len(tok)
    n_mm = sum(p.numel() for n, p in model.named_parameters() if p.dim() == 2 and "embed" not in n)
    n_head = vocab * hidden
    flops = {
        "trl_head": 6 * (n_mm + n_head) * padded,
        "compact": 6 * n_mm * padded + 6 * n_head * compl,
    }
    print(
        f"\n### fp32 matmul FLOP ceiling, 1 thread (best of 3; {int(real)} real tokens per batch)\n"
    )
    print("| shape | GFLOP/s |\n|---|---:|")
    m = int(padded)
    shapes = {
        "1024 x 1024 x 1024": (1024, 1024, 1024, 10),
        f"MLP up ({m} x {hidden} -> {org['ffn']})": (m, hidden, org["ffn"], 30),
        f"attention proj ({m} x {hidden} -> {hidden})": (m, hidden, hidden, 60),
        f"LM head ({m} x {hidden} -> {vocab})": (m, hidden, vocab, 20),
    }
    ceil = {}
    for name, (mm, k, n, reps) in shapes.items():
        ceil[name] = H.matmul_gflops(mm, k, n, reps)
        print(f"| {name} | {ceil[name]:.1f} |")
    ref_rate = list(ceil.values())[1]
    print(
        f"\n### SFT step, batch {org['sft_batch']}, {a.steps - 3} measured steps x {a.rounds} "
        f"interleaved rounds\n"
    )
    print(
        "| SFT head | ms/step | real tokens/s | padded tokens/s | GFLOP/s achieved | "
        "% of MLP-shape ceiling |\n|---|---:|---:|---:|---:|---:|"
    )
    for kind, v in res.items():
        st = statistics.fmean(x[0] for x in v)
        rate = flops[kind] / st / 1e9
        print(
            f"| {kind} | {1000 * st:.0f} | {real / st:.0f} | {padded / st:.0f} | {rate:.1f} | "
            f"{100 * rate / ref_rate:.0f}% |"
        )
    per_round = [x[0] / y[0] for x, y in zip(res["trl_head"], res["compact"])]
    total = sum(x[0] for x in res["trl_head"]) / sum(x[0] for x in res["compact"])
    print(
        f"\nspeed-up trl_head / compact: {total:.2f}x overall; per round "
        + ", ".join(f"{x:.2f}x" for x in per_round)
    )
    print(
        f"tokens per step: padded {padded:.0f}, real {real:.0f}, loss (completion) {compl:.0f}; "
        f"padding waste {100 * (1 - real / padded):.1f}% of computed positions; TRL's head scores "
        f"all {padded:.0f} positions, the compact head the {compl:.0f} with labels "
        f"({100 * compl / padded:.0f}%)"
    )
    print(
        f"FLOP-bound ideal at the MLP-shape rate: {1000 * flops['compact'] / ref_rate / 1e9:.0f} "
        f"ms/step (compact head, padded tokens), {1000 * 6 * (n_mm * real + n_head * compl) / ref_rate / 1e9:.0f} ms/step without padding"
    )
    la, lb = res["trl_head"][0][2], res["compact"][0][2]
    diff = max(abs(x - y) for x, y in zip(la, lb))
    print(f"loss, same seed, {len(la)} steps (round 0): max |diff| {diff:.2e} (max {max(la):.3f})")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--ref", default=None, help="model directory whose tokenizer is used")
    ap.add_argument("--steps", type=int, default=15, help="SFT steps per run (3 warm-up)")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds")
    ap.add_argument("--sft-records", type=int, default=4096, help="training records used")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    H.header("SFT with TRL's LM head vs compact_lm_head; interleaved rounds")
    cmd_sft(args)
