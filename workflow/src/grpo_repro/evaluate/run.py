"""Evaluation of one policy checkpoint (Sec. 6): n samples per prompt, success rate per prompt.

For each prompt q the table holds the number of correct samples under the strict reward (number
after ####, the reward GRPO trains on) and under the lenient one (last number), the estimate
p_hat(q) = successes / samples and its Wilson 95% interval.

Seeds: prompt q of (run, step, split) is sampled with its own generator seeded with
derive_seed(seed, "eval", run, step, split, prompt_id), so a rerun reproduces the table exactly
(`run`: "ref" for pi_ref, "<variant>/seed_<GRPO seed>" for a training run).

Resumable: prompts are processed in chunks of fixed boundaries (chunk_prompts, counted from the
first prompt); each finished chunk is appended to `<output>.partial.jsonl` (first line: a
fingerprint of model weights, decoding settings, seeds and prompts). A killed job restarts from
the completed chunks of a partial file whose fingerprint matches, and yields the identical table.
Outputs are written atomically (temporary file + os.replace) and the partial file is then removed.
A job's tables, checkpoint by checkpoint, are evaluated by grpo_repro.evaluate.job (run_eval_job).
"""

from __future__ import annotations

import hashlib
import json

# ------------------------------------------------------------------------------------------ inputs
import os
import sys
import time
from pathlib import Path

import numpy as np

from grpo_repro import io
from grpo_repro.evaluate.scoring import build_table, score_chunk
from grpo_repro.provenance import versions
from grpo_repro.sampler.params import SamplingParams
from grpo_repro.stats import derive_seed


def prompt_seeds(records, seed: int, run: str, step: int, split: str) -> list[int]:
    return [
        derive_seed(int(seed), "eval", str(run), int(step), str(split), r["prompt_id"])
        for r in records
    ]


# ------------------------------------------------------------------------------------------ evaluation


def evaluate_records(
    sampler,
    records: list[dict],
    *,
    samples: int,
    params: SamplingParams,
    seed: int,
    run: str,
    step: int,
    split: str,
    model_sha256: str = "",
    partial_path: str | Path | None = None,
    progress: bool = True,
    max_chunks: int | None = None,
):
    """Evaluate `records` ({prompt_id, prompt, gold}); returns (table DataFrame, metadata dict).

    `max_chunks` stops after that many newly computed chunks (tests: a simulated kill) and returns
    (None, None)."""
    from tqdm import tqdm

    if not records:
        raise ValueError(f"no prompts to evaluate for split {split!r}")
    chunk_prompts = int(getattr(sampler, "batch_prompts", 32))
    seeds = prompt_seeds(records, seed, run, step, split)
    ids_hash = hashlib.sha256(
        "\n".join(
            r["prompt_id"] + "\t" + r["prompt"] + "\t" + str(r["gold"]) for r in records
        ).encode()
    ).hexdigest()
    settings = {
        "model_sha256": model_sha256,
        "decoding": params.as_dict(),
        "samples": int(samples),
        "seed": int(seed),
        "run": run,
        "step": int(step),
        "split": split,
        "prompts_sha256": ids_hash,
        "chunk_prompts": chunk_prompts,
        "backend": getattr(sampler, "backend", "?"),
    }
    fingerprint = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()
    bounds = [
        (s, min(s + chunk_prompts, len(records))) for s in range(0, len(records), chunk_prompts)
    ]

    done = read_partial(Path(partial_path), fingerprint) if partial_path else {}
    done = {i: c for i, c in done.items() if i < len(bounds)}
    resumed = sorted(done)
    fh = None
    if partial_path:
        partial_path = Path(partial_path)
        partial_path.parent.mkdir(parents=True, exist_ok=True)
        # rewritten (atomically) from the chunks kept, so a line cut by a kill never precedes new ones
        lines = [{"fingerprint": fingerprint, "settings": settings}] + [done[i] for i in resumed]
        rewrite(partial_path, lines)
        fh = open(partial_path, "a")

    total = len(records) * samples
    initial = sum(len(done[i]["rows"]) for i in done) * samples
    bar = tqdm(
        total=total,
        initial=initial,
        unit="sample",
        desc=f"eval {run} step {step} {split}",
        disable=not progress,
        file=sys.stderr,
        dynamic_ncols=True,
        mininterval=0.5 if sys.stderr.isatty() else 15,
    )
    t0, new_tokens, new_samples, computed = time.perf_counter(), 0, 0, 0
    try:
        for i, (a, b) in enumerate(bounds):
            if i in done:
                continue
            if max_chunks is not None and computed >= max_chunks:
                return None, None
            chunk = records[a:b]
            out = sampler.sample(
                [r["prompt"] for r in chunk], samples, params, seeds[a:b], progress=bar.update
            )
            rows = score_chunk(chunk, out)
            rec = {
                "chunk": i,
                "rows": rows,
                "examples": [
                    {"prompt_id": chunk[j]["prompt_id"], "completions": out.texts[j][:3]}
                    for j in range(min(2, len(chunk)))
                ],
            }
            if fh is not None:
                append_line(fh, rec)
            done[i] = rec
            computed += 1
            new_tokens += out.n_tokens
            new_samples += len(chunk) * samples
            elapsed = time.perf_counter() - t0
            bar.set_postfix(tok_s=f"{new_tokens / max(elapsed, 1e-9):.0f}", refresh=False)
    finally:
        bar.close()
        if fh is not None:
            fh.close()
    seconds = time.perf_counter() - t0

    rows = [row for i in range(len(bounds)) for row in done[i]["rows"]]
    df = build_table(rows, run, split, step)
    n_tok = int(sum(r["tokens"] for r in rows))
    meta = {
        **settings,
        "n_prompts": len(records),
        "mean_p_hat": float(df["p_hat"].mean()),
        "mean_p_hat_lenient": float(df["p_hat_lenient"].mean()),
        "se_mean_p_hat": float(df["p_hat"].std(ddof=1) / np.sqrt(len(df))) if len(df) > 1 else None,
        "mean_completion_tokens": n_tok / (len(rows) * samples),
        "truncated_fraction": float(df["truncated"].sum() / (len(rows) * samples)),
        "seed_scheme": "torch.Generator per prompt, seed = derive_seed(seed, 'eval', run, step, "
        "split, prompt_id) (sha256); inverse-CDF sampling from its uniforms",
        "timing": {
            "seconds": seconds,
            "resumed_chunks": resumed,
            "computed_chunks": computed,
            "samples_per_s": new_samples / seconds if seconds > 0 and new_samples else None,
            "tokens_per_s": new_tokens / seconds if seconds > 0 and new_tokens else None,
        },
        "sampler": {
            "batch_prompts": getattr(sampler, "batch_prompts", None),
            "cache": getattr(sampler, "cache_mode", None),
        },
        "examples": [e for i in range(min(1, len(bounds))) for e in done[i].get("examples", [])],
        "versions": versions(),
    }
    return df, meta


def task_samples(ecfg: dict, split: str, temperature: float) -> int:
    """Samples per prompt of one table: one when greedy (temperature 0), eval.val_samples on the
    val split (it only chooses each policy's best temperature) when set, else eval.samples."""
    if temperature == 0:
        return 1
    if split == "val" and ecfg.get("val_samples") is not None:
        return int(ecfg["val_samples"])
    return int(ecfg["samples"])


def prompts_per_batch(batch_prompts: int, samples: int, n: int) -> int:
    """Prompts per sampler batch for a task drawing `n` samples per prompt: eval.batch_prompts
    counts prompts of eval.samples draws each, so a greedy task (n = 1) batches as many rows,
    batch_prompts * samples / n prompts (per-prompt seeded draws: the same tables, fewer forwards)."""
    return max(1, int(batch_prompts) * int(samples) // max(1, int(n)))


def partial_path_for(csv_path: str | Path) -> Path:
    p = Path(csv_path)
    return p.with_name(p.stem + ".partial.jsonl")


def read_partial(path: Path, fingerprint: str) -> dict[int, dict]:
    """Completed chunks {index: record} of a partial file with this fingerprint ({} otherwise)."""
    if not path.exists():
        return {}
    chunks = {}
    with open(path) as f:
        lines = f.read().split("\n")
    try:
        header = json.loads(lines[0])
    except (json.JSONDecodeError, IndexError):
        return {}
    if header.get("fingerprint") != fingerprint:
        print(f"[evaluate] {path}: different model/settings, starting over", file=sys.stderr)
        return {}
    for line in lines[1:]:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:  # a line cut by a kill: that chunk is redone
            continue
        chunks[int(rec["chunk"])] = rec
    return chunks


def append_line(f, obj) -> None:
    f.write(json.dumps(obj, separators=(",", ":")) + "\n")
    f.flush()
    os.fsync(f.fileno())


def rewrite(path: str | Path, lines: list[dict]) -> None:
    """Replace the partial file by `lines` (atomically), so a line cut by a kill never precedes new ones."""
    io.write_text(path, "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
