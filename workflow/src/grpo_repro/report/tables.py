"""Evaluation tables -> one long data frame (Sec. 6: per-question success rate = successes / samples).

Layout read (grpo_repro.runs.Tree.table): results/evaluate/{variant}/seed_{seed}/{split}/step_{N}.csv
for N > 0 and results/evaluate/ref/{split}/step_0.csv (pi_ref, evaluated once and shared by every
variant). The long frame has one row per
(variant, split, step, prompt_id); the reference rows are repeated under every variant at step 0
(column `source` = "ref") so that each variant's trajectory starts at pi_ref.

Training curves (Sec. 6; what an RL practitioner reads first, `training_frame`): per GRPO run and
optimizer step, the training reward (the binary reward of the sampled groups), the KL estimate to
the anchor (pi_ref, or the previous policy for mirror variants), the policy entropy, the mean
completion length, the share of clipped ratios and the share of groups whose rewards are all equal
(no signal), read from each run's TRL log (results/train/{variant}/seed_{seed}/train_log.csv).
Steps where TRL logs a quantity only at generation time (every mu steps) keep their blanks.
"""

from __future__ import annotations

import csv
import zlib
from io import StringIO
from pathlib import Path

import numpy as np
import pandas as pd

from grpo_repro import io
from grpo_repro.evaluate.scoring import PROMPT_COLUMNS
from grpo_repro.io import DataError
from grpo_repro.runs import REF, Tree, run_name

KEY = ["variant", "seed", "split", "step", "prompt_id"]
LONG_COLUMNS = ["variant", "seed", "split", "step", "checkpoint", "source", *PROMPT_COLUMNS]


def eval_entries(results: str, variants, seeds, splits, steps) -> list[dict]:
    """(variant, seed, split, step, path) of every table the stage reads; the ref table once per
    split (seed -1: pi_ref has no GRPO seed)."""
    out, tree = [], Tree(results)
    for split in splits:
        ref = {"variant": REF, "seed": -1, "split": split, "step": 0}
        out.append({**ref, "path": tree.table(REF, split, 0)})
        for variant in variants:
            for seed in seeds:
                run = run_name(variant, seed)
                out += [
                    {
                        "variant": variant,
                        "seed": int(seed),
                        "split": split,
                        "step": int(step),
                        "path": tree.table(run, split, step),
                    }
                    for step in steps
                    if int(step) > 0
                ]
    return out


COUNTS = ("successes", "samples", "successes_lenient")  # whole numbers, never NaN


def read_eval_table(path: str | Path) -> pd.DataFrame:
    """One evaluation table, checked: every row complete (a table cut by a damaged disk or an
    editor is refused, not read with NaN), required columns, numeric values, whole counts with
    0 <= successes <= samples, unique prompts, p_hat = successes / samples, and as many rows as
    its JSON sidecar's n_prompts. DataError naming the file (and line) otherwise."""
    path = Path(path)
    redo = f"delete {path} and rerun: its evaluation job writes it again"
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    if not text.endswith("\n"):
        raise DataError(f"{path}:{len(lines)}: the last row is cut (no end of line); {redo}")
    df = pd.read_csv(StringIO(text), dtype={"prompt_id": str})
    missing = [c for c in PROMPT_COLUMNS if c not in df.columns]
    if missing:
        raise DataError(f"{path}: missing columns {missing} (expected {list(PROMPT_COLUMNS)})")
    width = len(next(csv.reader([lines[0]])))
    for no, row in enumerate(csv.reader(lines[1:]), start=2):
        if len(row) != width:
            raise DataError(f"{path}:{no}: {len(row)} fields, the header has {width}; {redo}")
    for col in PROMPT_COLUMNS:
        bad = df.index[df[col].isna()]
        if len(bad):
            raise DataError(f"{path}:{bad[0] + 2}: no value in column {col}; {redo}")
        if col != "prompt_id" and not pd.api.types.is_numeric_dtype(df[col]):
            raise DataError(f"{path}: column {col} is not numeric; {redo}")
    for col in COUNTS:
        bad = df.index[df[col] != df[col].round()]
        if len(bad):
            raise DataError(f"{path}:{bad[0] + 2}: {col} is not a whole number; {redo}")
    if df["prompt_id"].duplicated().any():
        raise DataError(f"{path}: duplicated prompt_id")
    n = df["samples"]
    bad = (df["successes"] < 0) | (df["successes"] > n) | (n <= 0)
    bad |= (df["successes_lenient"] < 0) | (df["successes_lenient"] > n)
    if bad.any():
        raise DataError(
            f"{path}: need 0 <= successes <= samples and samples > 0 ({int(bad.sum())} rows)"
        )
    if not np.allclose(df["p_hat"], df["successes"] / n, rtol=0, atol=1e-9):
        raise DataError(f"{path}: p_hat differs from successes / samples; {redo}")
    sidecar = path.with_suffix(".json")
    if sidecar.exists():
        expected = io.read_json(sidecar).get("n_prompts")
        if expected is not None and expected != len(df):
            raise DataError(
                f"{path}: {len(df)} rows, its sidecar {sidecar} says {expected}; {redo}"
            )
    df = df[list(PROMPT_COLUMNS)].copy()
    for col in COUNTS:
        df[col] = df[col].astype(int)
    return df


def load_long(entries: list[dict], steps) -> pd.DataFrame:
    """Long frame of every table in `entries`; pi_ref's rows copied under each (variant, seed) at
    step 0 (source "ref"). Checks that every table of a split holds the same prompts as pi_ref's
    (per-prompt pairing of checkpoints with the reference needs it)."""
    steps = sorted(int(s) for s in steps)
    index = {int(s): k for k, s in enumerate(steps)}
    runs = sorted({(e["variant"], e["seed"]) for e in entries if e["variant"] != REF})
    frames, ref_ids = [], {}
    for e in entries:
        df = read_eval_table(e["path"])
        split = e["split"]
        if e["variant"] == REF:
            ref_ids[split] = set(df["prompt_id"])
            for v, s in runs:
                frames.append(df.assign(variant=v, seed=s, split=split, step=0, source=REF))
        else:
            frames.append(
                df.assign(
                    variant=e["variant"],
                    seed=e["seed"],
                    split=split,
                    step=int(e["step"]),
                    source="checkpoint",
                )
            )
    long = pd.concat(frames, ignore_index=True)
    for (split, variant, seed, step), g in long.groupby(["split", "variant", "seed", "step"]):
        if split in ref_ids and set(g["prompt_id"]) != ref_ids[split]:
            raise ValueError(
                f"evaluate {variant}/seed_{seed}/{split}/step_{step}: prompt set differs from pi_ref's"
            )
    long["checkpoint"] = long["step"].map(index)
    if long["checkpoint"].isna().any():
        raise ValueError("a table's step is not among the checkpoint steps")
    long["checkpoint"] = long["checkpoint"].astype(int)
    return long[LONG_COLUMNS].sort_values(KEY, kind="stable").reset_index(drop=True)


def pool_seeds(long: pd.DataFrame) -> pd.DataFrame:
    """One row per (variant, split, step, prompt): successes and samples summed over the GRPO seeds,
    p_hat their ratio (the mean over seeds of each seed's success rate, every seed having the same
    number of samples), Wilson bounds of the pooled counts (for display; seeds are not independent
    draws of one binomial). Step 0 is pi_ref, the same under every seed (counted once)."""
    from grpo_repro.stats import wilson

    ref = long["step"] == 0
    first = long.loc[ref, "seed"].min()
    parts = [long[~ref], long[ref & (long["seed"] == first)]]
    keys = ["variant", "split", "step", "checkpoint", "source", "prompt_id"]
    agg = {"successes": "sum", "samples": "sum", "successes_lenient": "sum", "seed": "nunique"}
    out = pd.concat(parts).groupby(keys, sort=True).agg(agg).reset_index()
    out = out.rename(columns={"seed": "n_seeds"})
    out["p_hat"] = out["successes"] / out["samples"]
    out["p_hat_lenient"] = out["successes_lenient"] / out["samples"]
    out["ci_low"], out["ci_high"] = wilson(out["successes"].to_numpy(), out["samples"].to_numpy())
    return out.sort_values(["variant", "split", "step", "prompt_id"], kind="stable").reset_index(
        drop=True
    )


def read_long(path: str | Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype={"prompt_id": str})


def read_pooled(path: str | Path) -> pd.DataFrame:
    """The long table of `path` pooled over GRPO seeds (pool_seeds)."""
    return pool_seeds(read_long(path))


def with_reference(long: pd.DataFrame) -> pd.DataFrame:
    """Adds p_ref and successes_ref (pi_ref's values of the same prompt) to every row."""
    ref = (
        long[long["step"] == 0]
        .drop_duplicates(["split", "prompt_id"])[["split", "prompt_id", "p_hat", "successes"]]
        .rename(columns={"p_hat": "p_ref", "successes": "successes_ref"})
    )
    return long.merge(ref, on=["split", "prompt_id"], how="left", validate="many_to_one")


def final_rows(long: pd.DataFrame) -> pd.DataFrame:
    """Rows of each (variant, split)'s last checkpoint."""
    last = long.groupby(["variant", "split"])["step"].transform("max")
    return long[long["step"] == last]


def stable_seed(seed: int, *parts: str) -> list[int]:
    """Seed sequence for numpy from the master seed and names (stable across Python runs)."""
    return [int(seed)] + [zlib.crc32(str(p).encode()) for p in parts]


def select_prompts(prompt_ids, n: int, seed: int, split: str) -> list[str]:
    """Seeded random choice of n prompts (without replacement) of one split, in sorted id order."""
    ids = sorted(set(map(str, prompt_ids)), key=_natural)
    rng = np.random.default_rng(stable_seed(seed, "trajectories", split))
    n = min(int(n), len(ids))
    chosen = rng.choice(len(ids), size=n, replace=False)
    return [ids[i] for i in sorted(chosen)]


def _natural(s: str):
    return (0, int(s), "") if s.lstrip("-").isdigit() else (1, 0, s)


def trajectories(long: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """Per-prompt success rate along checkpoints, of the first GRPO seed's run of every variant
    (the paper's Fig 3 shows one run), for the seeded prompt selection of each split (the same
    prompts under every variant); `ref_zero` marks prompts with p_ref_hat = 0."""
    long = long[long["seed"] == long["seed"].min()]
    parts = []
    for split, g in long.groupby("split"):
        chosen = select_prompts(g["prompt_id"].unique(), n, seed, split)
        parts.append(g[g["prompt_id"].isin(chosen)])
    out = with_reference(pd.concat(parts, ignore_index=True))
    out["ref_zero"] = out["successes_ref"] == 0
    return out.sort_values(["split", "prompt_id", "variant", "step"], kind="stable").reset_index(
        drop=True
    )


#: (column of TRL's log, name in the report)
METRICS = (
    ("reward", "reward"),
    ("kl", "kl"),
    ("entropy", "entropy"),
    ("completions/mean_length", "completion_length"),
    ("clip_ratio/region_mean", "clip_ratio"),
    ("frac_reward_zero_std", "groups_without_signal"),
)


def training_frame(logs: dict) -> pd.DataFrame:
    """Long frame variant, seed, step, metric, value from {"<variant>/seed_<seed>": log path}."""
    parts = []
    for run, path in logs.items():
        variant, _, seed = run.partition("/seed_")
        log = pd.read_csv(path)
        log = log[log["step"].notna()].drop_duplicates("step", keep="first")
        for col, name in METRICS:
            if col in log.columns:
                v = log[["step", col]].dropna().rename(columns={col: "value"})
                parts.append(v.assign(variant=variant, seed=int(seed), metric=name))
    cols = ["variant", "seed", "metric", "step", "value"]
    return pd.concat(parts, ignore_index=True)[cols].sort_values(cols[:4], kind="stable")
