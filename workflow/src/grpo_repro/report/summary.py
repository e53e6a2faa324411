"""results/summary.json and results/summary.md: the run in numbers, beside the paper's.

Collects the mean success per (variant, split, checkpoint) with its bootstrap interval, the paired
difference final - p_ref, the amplification shares, the theory overlay, the paper's numbers (Sec. 6:
21% for pi_ref and 37.5% after one epoch of GRPO, GSM8K test, 50 samples) with the list of
configuration keys that differ from the paper's setup, the derivation stage's pass counts, the
training runs' last logged values, the resolved configuration and, when present, per-rule wall
times from Snakemake benchmark files.

The paper's setup (Sec. 6, App. A) beside this run's (results/summary.json, paper_comparison,
`paper_setup`):
the paper's headline numbers (21% for pi_ref, 37.5% after one epoch of GRPO), the configuration
keys that determine them, and the keys of a configuration that differ from the paper's or from
another configuration (a training run's recorded keys against the workflow's).
"""

from __future__ import annotations

import glob
import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd

ITERATION_NOTE = (
    "Training steps are not exact iterations of the paper's recurrences. One iteration is an exact "
    "KL-regularised argmax with the advantage weights frozen at p_{n-1}; TRL takes mu = "
    "train.num_iterations gradient steps per sampled batch and revisits a prompt only when it is "
    "sampled again, so a checkpoint is a parametric, partially optimised iterate (App. F, Thm 10: "
    "|p~_n - p*| <= 2 delta* asymptotically). The overlay compares the last checkpoint with the "
    "predicted limit, and checkpoint k with iterate n = k only as a convention; nominal_iterations_final "
    "(sampled batches that contained a given training prompt: one per epoch) bounds the number of "
    "advantage refreshes a training prompt received."
)


def derivation_counts(records: list[dict]) -> dict:
    """Claims passed / total and errata confirmed / total of results/theory/derivations.json."""
    claims = [r for r in records if r.get("kind", "claim") == "claim"]
    errata = [r for r in records if r.get("kind") == "erratum"]
    return {
        "claims_passed": sum(bool(r["passed"]) for r in claims),
        "claims_total": len(claims),
        "errata_passed": sum(bool(r["passed"]) for r in errata),
        "errata_total": len(errata),
        "failed": [r["id"] for r in records if not r["passed"]],
        "errata": [
            {"id": r["id"], "reference": r.get("reference"), "passed": bool(r["passed"])}
            for r in errata
        ],
    }


def train_last(log_csv: str | Path) -> dict:
    """Last logged value of every numeric column of a train_log.csv (step, reward, kl, loss, ...)."""
    df = pd.read_csv(log_csv)
    out = {}
    for col in df.columns:
        s = pd.to_numeric(df[col], errors="coerce").dropna()
        if len(s):
            v = s.iloc[-1]
            out[col] = int(v) if float(v).is_integer() and col == "step" else float(v)
    return out


#: stages whose every job is upstream of the summary: their benchmark files are all written when
#: it runs (figures, report and fixed_point jobs may still be running: their list would depend on
#: which jobs finished first)
UPSTREAM_STAGES = ("theory", "data", "train", "evaluate")


def benchmarks(bench_dir: str | Path, stages: tuple[str, ...] | None = None) -> list[dict]:
    """Wall time (s) and peak memory of every Snakemake benchmark file results/benchmarks/*.tsv
    (of the given stages, results/benchmarks/<stage>/..., when `stages` is set), sorted by path."""
    rows = []
    found = glob.glob(os.path.join(str(bench_dir), "**", "*.tsv"), recursive=True)
    for path in sorted(found):
        if (
            stages is not None
            and os.path.relpath(path, str(bench_dir)).split(os.sep)[0] not in stages
        ):
            continue
        try:
            df = pd.read_csv(path, sep="\t")
        except (pd.errors.EmptyDataError, OSError):
            continue
        if "s" not in df.columns or df.empty:
            continue
        rows.append(
            {
                "file": os.path.relpath(path, str(bench_dir)),
                "seconds": float(df["s"].mean()),
                "max_rss_mb": float(pd.to_numeric(df.get("max_rss"), errors="coerce").max())
                if "max_rss" in df.columns
                else None,
            }
        )
    return rows


def stage_times(bench_dir: str | Path, since: float | None = None) -> str:
    """Wall time per stage (sum over its jobs' benchmark files) and the largest peak memory of any
    of its jobs, printed when a run succeeds: the jobs of this invocation only (`since`: when it
    started; a job that ran before an interruption and was not redone is not this run's time)."""
    every = benchmarks(bench_dir)
    rows = [
        (b["file"].split("/")[0], os.path.basename(b["file"])[:-4], b["seconds"], b["max_rss_mb"])
        for b in every
        if since is None or os.path.getmtime(os.path.join(str(bench_dir), b["file"])) >= since
    ]
    if not rows:
        return ""
    earlier = len(every) - len(rows)
    lines = [
        "",
        "Wall time per stage of this run's jobs (s; jobs of a stage may run side by side), peak "
        "memory of a job"
        + (f" ({earlier} jobs of earlier runs not counted)" if earlier else "")
        + ":",
    ]
    for stage in dict.fromkeys(r[0] for r in rows):
        jobs = [r for r in rows if r[0] == stage]
        longest = max(jobs, key=lambda r: r[2])
        rss = max(
            (r[3] for r in jobs if r[3] is not None and not math.isnan(r[3])), default=float("nan")
        )
        lines.append(
            f"  {stage:12s} {sum(r[2] for r in jobs):8.1f}  ({len(jobs)} jobs, longest "
            f"{longest[1]} {longest[2]:.1f}; peak memory {rss:.0f} MB)"
        )
    return "\n".join(lines)


def ordered(df: pd.DataFrame, config: dict) -> pd.DataFrame:
    """Rows in the configuration's order of variants and splits, then by step."""
    vo = {v: i for i, v in enumerate(config["variants"])}
    so = {v: i for i, v in enumerate(config["eval"]["splits"])}
    keys = [df["variant"].map(vo).fillna(len(vo)), df["split"].map(so).fillna(len(so))]
    if "step" in df.columns:
        keys.append(df["step"])
    order = np.lexsort([k.to_numpy() for k in reversed(keys)])
    return df.iloc[order].reset_index(drop=True)


def step0_consistency(train_logs: dict, mean: pd.DataFrame, config: dict) -> dict:
    """Training and evaluation see the same policy at step 0: the mean training reward over the
    first epoch of the pool (every pool prompt sampled once, near pi_ref) against pi_ref's measured
    mean on that pool. Only defined when GRPO trains on the evaluated pool (train.on_pool)."""
    train, pool = config["train"], config["data"]["train_pool"]
    ref = mean[(mean["step"] == 0) & (mean["split"] == "train")]
    if not train["on_pool"] or pool is None or ref.empty:
        return {}
    steps = math.ceil(pool / train["prompts_per_step"]) * train["num_iterations"]
    out = {}
    for variant, path in train_logs.items():
        log = pd.read_csv(path)
        r = (
            log.loc[log["step"] <= steps, "reward"].dropna()
            if "reward" in log
            else pd.Series(dtype=float)
        )
        if len(r):
            out[variant] = {
                "first_epoch_steps": steps,
                "first_epoch_reward": float(r.mean()),
                "pi_ref_pool_mean": float(ref["mean"].iloc[0]),
                "difference": float(r.mean() - ref["mean"].iloc[0]),
            }
    return out


def _records(df: pd.DataFrame) -> list[dict]:
    return json.loads(df.to_json(orient="records"))


def sharpening(best: pd.DataFrame | None, curve: pd.DataFrame | None, config: dict) -> dict:
    """The headline against the sharpening baseline (grpo_repro.report.temperature): each
    variant at its best temperature against pi_ref at its best (pooled and per seed, by problem
    class), one verdict sentence per variant generated from those numbers, and the pooled
    temperature curves. Empty without eval.temperatures."""
    if best is None or curve is None or best.empty:
        return {}
    from grpo_repro.evaluate.tasks import main_temperature
    from grpo_repro.report.temperature import verdict

    pooled = ordered(best[best["seed"].astype(str) == "all"], config)
    headline = pooled[pooled["klass"] == "all"]
    t_main = main_temperature(config)
    return {
        "best_vs_best": _records(pooled),
        "best_vs_best_by_seed": _records(ordered(best[best["seed"].astype(str) != "all"], config)),
        "sharpening_verdict": {r["variant"]: verdict(r, t_main) for r in _records(headline)},
        # the same verdict per problem class (organism: misconception / other), failures included
        "sharpening_verdict_by_class": [
            verdict(r, t_main) for r in _records(pooled[pooled["klass"] != "all"])
        ],
        "temperature_curve": _records(curve[curve["seed"].astype(str) == "all"]),
    }


def build(
    mean: pd.DataFrame,
    paired: pd.DataFrame,
    shares: pd.DataFrame,
    overlay: pd.DataFrame,
    derivations: list[dict],
    run_configs: dict,
    train_logs: dict,
    config: dict,
    bench: list[dict] | None = None,
    splits: dict | None = None,
    best: pd.DataFrame | None = None,
    curve: pd.DataFrame | None = None,
    fixed_point: dict | None = None,
    zero: dict | None = None,
) -> dict:
    """The summary as one JSON-serialisable dict (see the module docstring). Tables hold the rows
    pooled over GRPO seeds (seed "all"); `paired_difference_by_seed` the per-seed differences."""
    by_seed = ordered(paired[paired["seed"].astype(str) != "all"], config)
    mean, paired, shares = (d[d["seed"].astype(str) == "all"] for d in (mean, paired, shares))
    mean, paired, shares, overlay = (ordered(d, config) for d in (mean, paired, shares, overlay))
    ref_rows = mean[(mean["step"] == 0) & (mean["split"] == PAPER["split"])]
    ref_mean = float(ref_rows["mean"].iloc[0]) if len(ref_rows) else None
    fin = paired[(paired["variant"] == PAPER["variant"]) & (paired["split"] == PAPER["split"])]
    final_mean = float(fin["mean_final"].iloc[0]) if len(fin) else None
    deviations = paper_deviations(config)
    comparison = {
        "paper": PAPER,
        "ours": {
            "ref_mean_success": ref_mean,
            "final_mean_success": final_mean,
            "variant": PAPER["variant"],
            "split": PAPER["split"],
            "final_step": int(fin["final_step"].iloc[0]) if len(fin) else None,
        },
        "comparable": not deviations,
        "deviations": deviations,
        "statement": (
            "Comparable: this run uses the paper's stated configuration (unstated choices "
            "are recorded in config)."
            if not deviations
            else "NOT comparable: the paper's 21% -> 37.5% is GSM8K test with "
            "Qwen2.5-0.5B-Instruct after one epoch; this run differs in "
            + ", ".join(d["key"] for d in deviations)
            + "."
        ),
    }
    # a training run records only the keys it reads: compare those
    run_diff = {v: config_diff(c, restrict(config, c)) for v, c in run_configs.items()}
    return {
        "stage": "summary",
        "data": splits or {},
        "mean_success": _records(mean),
        "paired_difference": _records(paired),
        "paired_difference_by_seed": _records(by_seed),
        "amplification_shares": _records(shares),
        "theory_overlay": _records(overlay),
        "paper_comparison": comparison,
        **sharpening(best, curve, config),
        "fixed_point": fixed_point,  # the compact study (report.law.section; None without it)
        "zero": zero,  # the zero-success study (grpo_repro.zero.section; None without it)
        "derivations": derivation_counts(derivations),
        "train": {v: train_last(p) for v, p in train_logs.items()},
        "step0_consistency": step0_consistency(train_logs, mean, config),
        "train_run_config_differs_from_workflow_config": run_diff,
        "iteration_note": ITERATION_NOTE,
        "benchmarks": bench or [],
        "config": config,
    }


#: Sec. 6 of the paper (GSM8K test, 1319 questions, 50 samples each, Qwen2.5-0.5B-Instruct)
PAPER = {
    "ref_mean_success": 0.21,
    "final_mean_success": 0.375,
    "variant": "grpo",
    "split": "test",
    "dataset": "GSM8K test (1319 questions), 50 samples per question",
    "model": "Qwen/Qwen2.5-0.5B-Instruct",
    "training": "TRL GRPO, one epoch of the GSM8K train split",
}

#: (config key path, the paper's value) of every stated setting that determines the numbers
PAPER_SETUP = [
    (("data", "source"), "gsm8k"),
    (("data", "n_test"), None),
    (("data", "n_train"), None),
    (("model", "name_or_path"), "Qwen/Qwen2.5-0.5B-Instruct"),
    (("train", "on_pool"), False),
    (("train", "max_steps"), None),
    (("train", "beta"), 0.1),
    (("train", "clip_eps"), 0.2),
    (("train", "learning_rate"), 5e-6),
    (("train", "num_iterations"), 10),
    (("train", "num_generations"), 16),
    (("train", "prompts_per_step"), 28),
    (("train", "temperature"), 0.1),
    (("train", "max_completion_length"), 200),
    (("eval", "samples"), 50),
]


def _get(d: dict, path):
    for k in path:
        d = d[k]
    return d


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=0.0)
    return a == b


def paper_deviations(config: dict) -> list[dict]:
    """Configuration keys whose value differs from the paper's stated setup (Sec. 6, App. A)."""
    out = []
    for path, paper in PAPER_SETUP:
        try:
            ours = _get(config, path)
        except (KeyError, TypeError):
            ours = "<missing>"
        if not _same(ours, paper):
            out.append({"key": ".".join(path), "ours": ours, "paper": paper})
    return out


def restrict(full, like):
    """`full` cut down to the keys (nested) that `like` has."""
    if isinstance(full, dict) and isinstance(like, dict):
        return {k: restrict(full.get(k, "<missing>"), v) for k, v in like.items()}
    return full


def config_diff(a, b, prefix="") -> list[str]:
    """Dotted keys where two nested configurations differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            out += config_diff(a.get(k, "<missing>"), b.get(k, "<missing>"), f"{prefix}{k}.")
        return out
    return [] if _same(a, b) else [prefix.rstrip(".")]
