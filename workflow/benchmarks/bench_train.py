"""Benchmark of the training stage on CPU (Sec. 6 experiment; the fast GRPO step of
grpo_repro.train.fast, config key train.fast_step, and the compact SFT head of
grpo_repro.train.sft.compact_lm_head). One thread, one process; alternatives are interleaved in
rounds inside the process and compared by ratio (the machine may be shared).

    python workflow/benchmarks/bench_train.py profile [--shapes 8x8,16x8] [--steps 12]
    python workflow/benchmarks/bench_train.py step [--rounds 3] [--steps 12] [--kinds trl,fast]
    python workflow/benchmarks/bench_train.py sft [--rounds 2] [--steps 15]   (= bench_sft.py)

profile: seconds per GRPO optimizer step split by component (train_harness.COMPONENTS) for TRL's
         path (model.generate + TRL's log-probs) and the fast path, per batch shape (prompts x G).
step:    seconds per GRPO step, TRL's generation vs the batched sampler (fast step), interleaved
         rounds: per-round and overall ratio (target >= 3x), peak RSS of each trainer. --kinds may
         add rollouts_only (sampler + TRL's log-probs) and logps_only (TRL generation + fast
         log-probs).
sft:     the pipeline's SFT (grpo_repro.train.sft.train_reference) with TRL's LM head on every
         position vs compact_lm_head: ms/step, tokens/s, same loss; the fp32 matmul FLOP ceiling at
         1 thread, achieved FLOP rate and padding waste.

pi_ref: --ref DIR, default results/train/ref/model, else a quick pi_ref built once by the
pipeline's data_prepare + train_reference functions with the SFT cut to --sft-steps (300) steps
under results/benchmarks_cache/ (340 s for 300 steps, one thread, shared 2-core machine).
Prompts: --prompts JSONL, default results/data/train_pool.jsonl, else that cached pool, else the
organism pool from grpo_repro.data. The trainers are built as grpo_repro.train.grpo.train builds
them (train_harness.build_trainer) but write no checkpoints.
Each run prints its command line and markdown tables.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train_harness as H

DESCRIPTION = {
    "profile": "GRPO step by component, TRL's path vs the fast step; 1 thread",
    "step": "seconds per GRPO step, TRL's generation vs the batched sampler; interleaved rounds",
    "sft": "SFT with TRL's LM head vs compact_lm_head; interleaved rounds",
}
KINDS = {
    "trl": None,
    "fast": {},
    "rollouts_only": {"logps": "trl", "defer_old_logps": False},
    "logps_only": {"rollouts": "trl"},
}


def shape_of(text: str) -> tuple[int, int]:
    pps, g = text.lower().split("x")
    return int(pps), int(g)


def run_profiled(config, records, ref, variant, steps, kind):
    """(summary, trainer's log, peak RSS GiB) of one short training run of `kind`."""
    gc.collect()
    H.reset_peak_rss()
    tr = H.build_trainer(config, records, ref, variant, steps=steps, fast=KINDS[kind])
    prof = H.Profiler(tr)
    tr.train()
    log = [r for r in tr.state.log_history if "completions/mean_length" in r]
    out = prof.summary(), log, H.peak_rss_gib()
    del tr, prof
    return out


def cmd_profile(a, ref, records):
    for text in a.shapes.split(","):
        pps, g = shape_of(text)
        config = H.load_config(prompts_per_step=pps, num_generations=g)
        res = {}
        for kind in a.kinds.split(","):
            t0 = time.time()
            s, log, rss = run_profiled(config, records, ref, a.variant, a.steps, kind)
            res[kind] = s
            mean_len = statistics.fmean(r["completions/mean_length"] for r in log)
            clipped = statistics.fmean(r["completions/clipped_ratio"] for r in log)
            print(
                f"[{text} {kind}] {time.time() - t0:.0f} s wall for {a.steps} steps; mean completion "
                f"length {mean_len:.1f}, truncated {clipped:.3f}; peak RSS {rss:.2f} GiB",
                flush=True,
            )
        mu = config["train"]["num_iterations"]
        print()
        print(H.table(f"{pps} prompts x G {g}, mu {mu}, variant {a.variant}, 1 thread", res))
        if "trl" in res and "fast" in res:
            print(f"\ntrl / fast: {res['trl']['total'] / res['fast']['total']:.2f}x per step\n")


def cmd_step(a, ref, records):
    kinds = a.kinds.split(",")
    config = H.load_config(prompts_per_step=a.pps, num_generations=a.G)
    secs = {k: [] for k in kinds}
    cpu = {k: [] for k in kinds}
    sums = {k: [] for k in kinds}
    rss = {k: [] for k in kinds}
    for r in range(a.rounds):
        for k in kinds:
            s, _, peak = run_profiled(config, records, ref, a.variant, a.steps, k)
            secs[k].append(s["total"])
            cpu[k].append(s["cpu"])
            sums[k].append(s)
            rss[k].append(peak)
            print(
                f"round {r} {k:14s} {s['total']:.3f} s/step wall, {s['cpu']:.3f} CPU s/step, "
                f"peak RSS {peak:.2f} GiB",
                flush=True,
            )
    others = [k for k in kinds if k != "trl"]
    print(f"\n### seconds per GRPO step, {a.pps} prompts x G {a.G}, variant {a.variant}, 1 thread")
    print(f"({a.steps - 2} measured steps per block after 2 warm-up steps, {a.rounds} rounds)\n")
    cols = [f"{k} s/step" for k in kinds] + [f"trl / {k}" for k in others]
    cols += [f"{k} CPU s/step" for k in kinds] + [f"trl / {k} (CPU)" for k in others]
    print("| round | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for r in range(a.rounds):
        cells = [f"{secs[k][r]:.3f}" for k in kinds]
        cells += [f"{secs['trl'][r] / secs[k][r]:.2f}x" for k in others]
        cells += [f"{cpu[k][r]:.3f}" for k in kinds]
        cells += [f"{cpu['trl'][r] / cpu[k][r]:.2f}x" for k in others]
        print(f"| {r} | " + " | ".join(cells) + " |")
    cells = [f"{statistics.fmean(secs[k]):.3f}" for k in kinds]
    cells += [f"{sum(secs['trl']) / sum(secs[k]):.2f}x" for k in others]
    cells += [f"{statistics.fmean(cpu[k]):.3f}" for k in kinds]
    cells += [f"{sum(cpu['trl']) / sum(cpu[k]):.2f}x" for k in others]
    print("| all | " + " | ".join(cells) + " |")
    print("\n| kind | peak RSS GiB (max over rounds, whole process while it ran) |\n|---|---:|")
    for k in kinds:
        print(f"| {k} | {max(rss[k]):.2f} |")
    if "fast" in secs:
        ratio = sum(secs["trl"]) / sum(secs["fast"])
        ratio_cpu = sum(cpu["trl"]) / sum(cpu["fast"])
        verdict = "met" if ratio >= 3 else "NOT met"
        print(
            f"\noverall trl / fast = {ratio:.2f}x wall, {ratio_cpu:.2f}x CPU (target >= 3x: {verdict})"
        )
    mean = {k: {c: statistics.fmean(x[c] for x in sums[k]) for c in sums[k][0]} for k in kinds}
    print()
    print(H.table(f"components, mean of {a.rounds} interleaved rounds", mean))


if __name__ == "__main__":
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("command", choices=["profile", "step", "sft"])
    ap.add_argument("--ref", default=None, help="pi_ref model directory")
    ap.add_argument("--prompts", default=None, help="prompt set JSONL (prompt_id, prompt, gold)")
    ap.add_argument("--sft-steps", type=int, default=300, help="SFT steps of a cached pi_ref")
    ap.add_argument("--variant", default="grpo")
    ap.add_argument("--steps", type=int, default=None, help="optimizer steps per block")
    ap.add_argument("--shapes", default="8x8,16x8", help="profile: prompts x G, comma separated")
    ap.add_argument("--kinds", default="trl,fast", help=f"comma separated, of {list(KINDS)}")
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds (step, sft)")
    ap.add_argument("--pps", type=int, default=8, help="step: prompts per step")
    ap.add_argument("--G", type=int, default=8, help="step: completions per prompt")
    ap.add_argument("--sft-records", type=int, default=4096, help="sft: training records used")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    H.header(DESCRIPTION[args.command])
    if args.command == "sft":
        from bench_sft import cmd_sft

        args.steps, args.rounds = args.steps or 15, args.rounds or 2
        cmd_sft(args)
        sys.exit(0)
    ref_dir, recs, source = H.resolve_inputs(args.ref, args.prompts, args.sft_steps)
    print(f"pi_ref: {ref_dir}; prompts: {source} ({len(recs)} records)\n", flush=True)
    if args.command == "profile":
        args.steps = args.steps or 12
        cmd_profile(args, ref_dir, recs)
    else:
        args.steps, args.rounds = args.steps or 12, args.rounds or 3
        cmd_step(args, ref_dir, recs)
