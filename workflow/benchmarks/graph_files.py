"""The files a finished run of the default graph leaves (results/logs, results/benchmarks, the
evaluation tables' metadata, pi_ref's config and record), read for workflow/benchmarks/bench_graph.py:
per job wall and CPU, the evaluation tasks' sampling seconds, the achieved FLOP rates."""

from __future__ import annotations

import glob
import json
import os
from pathlib import Path

import pandas as pd


def jobs(repo: Path) -> pd.DataFrame:
    """stage, job, wall, cpu of every job: from the `[job times]` line each job's log ends with
    (grpo_repro.io.job_times: exact CPU of the job and its children), else from Snakemake's
    benchmark file (whose CPU time is sampled every 30 s and misses a job's last seconds)."""
    import re

    rows = []
    logs = repo / "results" / "logs"
    bench = repo / "results" / "benchmarks"
    pat = re.compile(r"\[job times\] wall ([0-9.]+) s, cpu ([0-9.]+) s")
    for f in glob.glob(str(bench / "**" / "*.tsv"), recursive=True):
        df = pd.read_csv(f, sep="\t")
        rel = os.path.relpath(f, bench)[:-4]
        row = {
            "stage": rel.split(os.sep)[0],
            "job": rel,
            "wall": float(df["s"].iloc[0]),
            "cpu": float(df["cpu_time"].iloc[0]) if "cpu_time" in df else float("nan"),
            "source": "benchmark",
        }
        rows.append(row)
    by_log = {}
    for f in glob.glob(str(logs / "**" / "*.log"), recursive=True):
        m = pat.findall(Path(f).read_text(errors="replace")[-400:])
        if m:
            by_log[os.path.relpath(f, logs)[:-4]] = (float(m[-1][0]), float(m[-1][1]))
    for row in rows:  # log paths mirror benchmark paths up to the rule's name
        stage, rest = row["job"].split(os.sep, 1)
        for key in (row["job"], f"{stage}{os.sep}{rest.replace(os.sep, '_')}"):
            if key in by_log:
                row["wall_job"], row["cpu"] = by_log[key]
                row["source"] = "job log"
                break
    return pd.DataFrame(rows)


def model_params(repo: Path) -> int | None:
    cfg = repo / "results" / "train" / "ref" / "model" / "config.json"
    if not cfg.exists():
        return None
    c = json.loads(cfg.read_text())
    h, f, n, v = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["vocab_size"]
    kv = h // c["num_attention_heads"] * c.get("num_key_value_heads", c["num_attention_heads"])
    per_layer = h * h * 2 + 2 * h * kv + 3 * h * f  # q, o; k, v; gate, up, down
    return n * per_layer + h * v  # + the LM head (tied or not, it is a matmul per token)


def eval_metas(repo: Path) -> list[tuple[Path, dict]]:
    """(path, metadata) of every evaluation table of a run (results/evaluate/**/step_*.json)."""
    files = glob.glob(str(repo / "results" / "evaluate" / "**" / "step_*.json"), recursive=True)
    return [(Path(f), json.loads(Path(f).read_text())) for f in files]


def flop_rates(repo: Path, n_params: int, jb: pd.DataFrame) -> dict:
    """Achieved GFLOP/s per job-CPU-second of SFT, GRPO and evaluation (approximate token counts
    from the runs' records; prompts and completions both count)."""
    out = {}
    sft = repo / "results" / "train" / "ref" / "run.json"
    if sft.exists():
        r = json.loads(sft.read_text())
        tokens = r.get("tokens") or r.get("train_tokens")
        cpu = jb[jb["job"].str.endswith("train_reference")]["cpu"].sum()
        if tokens and cpu:
            out["sft"] = 6 * n_params * tokens / cpu / 1e9
    ev_tokens = 0.0
    for _, m in eval_metas(repo):
        ev_tokens += m["mean_completion_tokens"] * m["samples"] * m["n_prompts"]
    cpu = jb[jb["stage"] == "evaluate"]["cpu"].sum()
    if cpu:
        out["evaluate (completion tokens)"] = 2 * n_params * ev_tokens / cpu / 1e9
    return out


def eval_tasks(repo: Path) -> pd.DataFrame:
    """Sampling seconds of every evaluation task, from its table's metadata (step_N.json: at
    eval.temperature, every checkpoint of eval.splits and the final one of eval.temperature_splits;
    step_N_T<t>.json: the rest of the temperature sweep), summed per kind and split: what the
    evaluation stage spends its CPU on, and what a cut of the protocol would save."""
    rows = []
    for f, m in eval_metas(repo):
        rows.append(
            {
                "kind": "other temperatures" if "_T" in f.stem else "eval.temperature",
                "split": m["split"],
                "seconds": m.get("timing", {}).get("seconds", float("nan")),
                "completions": m["samples"] * m["n_prompts"],
            }
        )
    if not rows:
        return pd.DataFrame(columns=["kind", "split", "tasks", "seconds", "completions"])
    g = pd.DataFrame(rows).groupby(["kind", "split"], sort=True)
    return g.agg(
        tasks=("seconds", "size"), seconds=("seconds", "sum"), completions=("completions", "sum")
    ).reset_index()
