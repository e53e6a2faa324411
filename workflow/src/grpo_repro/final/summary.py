"""results/summary.json and results/summary.md: the run in numbers, beside the paper's.

Collects the mean success per (variant, split, checkpoint) with its bootstrap interval, the paired
difference final - p_ref, the amplification shares, the theory overlay, the paper's numbers (Sec. 6:
21% for pi_ref and 37.5% after one epoch of GRPO, GSM8K test, 50 samples) with the list of
configuration keys that differ from the paper's setup, the derivation stage's pass counts, the
training runs' last logged values, the resolved configuration and, when present, per-rule wall
times from Snakemake benchmark files.
"""

from __future__ import annotations

import glob
import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd

#: Sec. 6 of the paper (GSM8K test, 1319 questions, 50 samples each, Qwen2.5-0.5B-Instruct)
PAPER = {"ref_mean_success": 0.21, "final_mean_success": 0.375, "variant": "grpo", "split": "test",
         "dataset": "GSM8K test (1319 questions), 50 samples per question",
         "model": "Qwen/Qwen2.5-0.5B-Instruct", "training": "TRL GRPO, one epoch of the GSM8K train split"}

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

ITERATION_NOTE = (
    "Training steps are not exact iterations of the paper's recurrences. One iteration is an exact "
    "KL-regularised argmax with the advantage weights frozen at p_{n-1}; TRL takes mu = "
    "train.num_iterations gradient steps per sampled batch and revisits a prompt only when it is "
    "sampled again, so a checkpoint is a parametric, partially optimised iterate (App. F, Thm 10: "
    "|p~_n - p*| <= 2 delta* asymptotically). The overlay compares the last checkpoint with the "
    "predicted limit, and checkpoint k with iterate n = k only as a convention; nominal_iterations_final "
    "(sampled batches that contained a given training prompt: one per epoch) bounds the number of "
    "advantage refreshes a training prompt received.")


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


def derivation_counts(records: list[dict]) -> dict:
    """Claims passed / total and errata confirmed / total of results/theory/derivations.json."""
    claims = [r for r in records if r.get("kind", "claim") == "claim"]
    errata = [r for r in records if r.get("kind") == "erratum"]
    return {"claims_passed": sum(bool(r["passed"]) for r in claims), "claims_total": len(claims),
            "errata_passed": sum(bool(r["passed"]) for r in errata), "errata_total": len(errata),
            "failed": [r["id"] for r in records if not r["passed"]],
            "errata": [{"id": r["id"], "reference": r.get("reference"), "passed": bool(r["passed"])}
                       for r in errata]}


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


def benchmarks(bench_dir: str | Path) -> list[dict]:
    """Wall time (s) and peak memory of every Snakemake benchmark file results/benchmarks/*.tsv."""
    rows = []
    for path in sorted(glob.glob(os.path.join(str(bench_dir), "**", "*.tsv"), recursive=True)):
        try:
            df = pd.read_csv(path, sep="\t")
        except (pd.errors.EmptyDataError, OSError):
            continue
        if "s" not in df.columns or df.empty:
            continue
        rows.append({"file": os.path.relpath(path, str(bench_dir)), "seconds": float(df["s"].mean()),
                     "max_rss_mb": float(pd.to_numeric(df.get("max_rss"), errors="coerce").max())
                     if "max_rss" in df.columns else None})
    return rows


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
        r = log.loc[log["step"] <= steps, "reward"].dropna() if "reward" in log else pd.Series(dtype=float)
        if len(r):
            out[variant] = {"first_epoch_steps": steps, "first_epoch_reward": float(r.mean()),
                            "pi_ref_pool_mean": float(ref["mean"].iloc[0]),
                            "difference": float(r.mean() - ref["mean"].iloc[0])}
    return out


def _records(df: pd.DataFrame) -> list[dict]:
    return json.loads(df.to_json(orient="records"))


def build(mean: pd.DataFrame, paired: pd.DataFrame, shares: pd.DataFrame, overlay: pd.DataFrame,
          derivations: list[dict], run_configs: dict, train_logs: dict, config: dict,
          bench: list[dict] | None = None) -> dict:
    """The summary as one JSON-serialisable dict (see the module docstring)."""
    mean, paired, shares, overlay = (ordered(d, config) for d in (mean, paired, shares, overlay))
    ref_rows = mean[(mean["step"] == 0) & (mean["split"] == PAPER["split"])]
    ref_mean = float(ref_rows["mean"].iloc[0]) if len(ref_rows) else None
    fin = paired[(paired["variant"] == PAPER["variant"]) & (paired["split"] == PAPER["split"])]
    final_mean = float(fin["mean_final"].iloc[0]) if len(fin) else None
    deviations = paper_deviations(config)
    comparison = {
        "paper": PAPER,
        "ours": {"ref_mean_success": ref_mean, "final_mean_success": final_mean,
                 "variant": PAPER["variant"], "split": PAPER["split"],
                 "final_step": int(fin["final_step"].iloc[0]) if len(fin) else None},
        "comparable": not deviations,
        "deviations": deviations,
        "statement": ("Comparable: this run uses the paper's stated configuration (unstated choices "
                      "are recorded in config)." if not deviations else
                      "NOT comparable: the paper's 21% -> 37.5% is GSM8K test with "
                      "Qwen2.5-0.5B-Instruct after one epoch; this run differs in "
                      + ", ".join(d["key"] for d in deviations) + "."),
    }
    # a training run records only the keys it reads: compare those
    run_diff = {v: config_diff(c, restrict(config, c)) for v, c in run_configs.items()}
    return {
        "stage": "summary",
        "mean_success": _records(mean),
        "paired_difference": _records(paired),
        "amplification_shares": _records(shares),
        "theory_overlay": _records(overlay),
        "paper_comparison": comparison,
        "derivations": derivation_counts(derivations),
        "train": {v: train_last(p) for v, p in train_logs.items()},
        "step0_consistency": step0_consistency(train_logs, mean, config),
        "train_run_config_differs_from_workflow_config": run_diff,
        "iteration_note": ITERATION_NOTE,
        "benchmarks": bench or [],
        "config": config,
    }


def _pct(x) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def _ci(m, lo, hi) -> str:
    return f"{_pct(m)} [{_pct(lo)}, {_pct(hi)}]"


def _num(x, fmt="{:.3f}") -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else fmt.format(x)


def markdown(s: dict) -> str:
    """results/summary.md from the summary dict."""
    L = ["# Summary: GRPO success amplification (Mroueh, arXiv 2503.06639)", ""]
    cfg = s["config"]
    t = cfg["train"]
    L += [f"Configuration: variants {', '.join(cfg['variants'])}; model "
          f"`{cfg['model']['name_or_path'] or 'organism (built by the pipeline)'}`; data `{cfg['data']['source']}`; "
          f"beta = {t['beta']}, smoothing eps = {t['smoothing_eps']}, advantage = {t['advantage']}, "
          f"mu = {t['num_iterations']}, G = {t['num_generations']}, lr = {t['learning_rate']}; "
          f"{cfg['eval']['samples']} samples per prompt. Intervals: 95%, bootstrap over prompts "
          f"({cfg['plots']['n_bootstrap']} resamples).", ""]
    pc = s["paper_comparison"]
    L += ["## Reference and final success beside the paper", "",
          "| | pi_ref | final (grpo) |", "|---|---|---|",
          f"| paper (GSM8K test) | {_pct(pc['paper']['ref_mean_success'])} | {_pct(pc['paper']['final_mean_success'])} |",
          f"| this run ({pc['ours']['split']}, step {pc['ours']['final_step']}) | "
          f"{_pct(pc['ours']['ref_mean_success'])} | {_pct(pc['ours']['final_mean_success'])} |", "",
          pc["statement"], ""]
    if pc["deviations"]:
        L += ["| key | this run | paper |", "|---|---|---|"]
        L += [f"| {d['key']} | {d['ours']} | {d['paper']} |" for d in pc["deviations"]]
        L += [""]
    L += ["## Mean success per checkpoint (strict scoring)", "",
          "| variant | split | step | prompts | mean [95% CI] | lenient mean |", "|---|---|---|---|---|---|"]
    for r in s["mean_success"]:
        L.append(f"| {r['variant']} | {r['split']} | {r['step']} | {r['n_prompts']} | "
                 f"{_ci(r['mean'], r['low'], r['high'])} | {_pct(r['mean_lenient'])} |")
    L += ["", "## Final - p_ref (paired over prompts)", "",
          "| variant | split | final step | mean p_ref | mean final | difference [95% CI] | above / on / below |",
          "|---|---|---|---|---|---|---|"]
    sh = {(r["variant"], r["split"]): r for r in s["amplification_shares"]}
    for r in s["paired_difference"]:
        a = sh.get((r["variant"], r["split"]), {})
        L.append(f"| {r['variant']} | {r['split']} | {r['final_step']} | {_pct(r['mean_ref'])} | "
                 f"{_pct(r['mean_final'])} | {_ci(r['mean_diff'], r['low'], r['high'])} | "
                 f"{_pct(a.get('share_above'))} / {_pct(a.get('share_on'))} / {_pct(a.get('share_below'))} |")
    L += ["", "## Theory overlay (predicted recurrence from each prompt's measured p_ref)", "",
          s["iteration_note"], "",
          "| variant | split | amplified measured | amplified predicted | p_ref=0 stayed 0 | "
          "Spearman (limit) | Spearman (iterate) | Spearman (p_ref) | mean abs gap to limit |",
          "|---|---|---|---|---|---|---|---|---|"]
    for r in s["theory_overlay"]:
        L.append(f"| {r['variant']} | {r['split']} | {_pct(r['frac_amplified_measured'])} | "
                 f"{_pct(r['frac_amplified_predicted'])} | {r['n_ref_zero_stayed_zero']}/{r['n_ref_zero']} | "
                 f"{_num(r['spearman_limit'])} | {_num(r['spearman_iter'])} | {_num(r['spearman_p_ref'])} | "
                 f"{_num(r['mean_abs_gap_limit'])} |")
    notes = sorted({r["note"] for r in s["theory_overlay"] if r.get("note")})
    L += [""] + [f"Note: {n}." for n in notes] + ([""] if notes else [])
    d = s["derivations"]
    L += ["## Derivation checks (stage 1)", "",
          f"Claims passed: {d['claims_passed']} / {d['claims_total']}; paper errata confirmed: "
          f"{d['errata_passed']} / {d['errata_total']}."
          + (f" Failed: {', '.join(d['failed'])}." if d["failed"] else ""), ""]
    if s.get("step0_consistency"):
        L += ["## Step-0 consistency (training and evaluation see the same pi_ref)", "",
              "Mean training reward over the first epoch of the pool (each pool prompt sampled once, "
              "policy still near pi_ref) against pi_ref's evaluated mean on the same pool.", "",
              "| variant | first-epoch steps | training reward | pi_ref pool mean | difference |", "|---|---|---|---|---|"]
        for v, r in s["step0_consistency"].items():
            L.append(f"| {v} | {r['first_epoch_steps']} | {_pct(r['first_epoch_reward'])} | "
                     f"{_pct(r['pi_ref_pool_mean'])} | {_pct(r['difference'])} |")
        L.append("")
    L += ["## Training runs (last logged values)", "", "| variant | step | reward | kl | loss |", "|---|---|---|---|---|"]
    for v, r in s["train"].items():
        L.append(f"| {v} | {r.get('step', 'n/a')} | {_num(r.get('reward'))} | {_num(r.get('kl'), '{:.4g}')} | "
                 f"{_num(r.get('loss'), '{:.4g}')} |")
    diff = {v: k for v, k in s["train_run_config_differs_from_workflow_config"].items() if k}
    L += [""] + ([f"Training run configs differ from the workflow config: {diff}", ""] if diff else
                 ["Every training run's recorded config equals the workflow config.", ""])
    if s["benchmarks"]:
        L += ["## Wall time per rule (Snakemake benchmarks)", "", "| file | seconds |", "|---|---|"]
        L += [f"| {b['file']} | {b['seconds']:.1f} |" for b in s["benchmarks"]] + [""]
    L += ["## Resolved configuration", "", "```json", json.dumps(cfg, indent=2, sort_keys=True, default=str),
          "```", ""]
    return "\n".join(L)
