"""Success amplification measured on the evaluation tables (Thm 3: every fixed point p* > p_ref),
per GRPO seed and pooled over the seeds (column `seed`: the seed, or "all").

* `mean_by_step`: mean success over prompts at every (variant, seed, split, step); pooled rows
  average the seeds, with a crossed bootstrap 95% interval over seeds and prompts
  (grpo_repro.stats.crossed_bootstrap_ci); per-seed rows resample prompts;
* `final_vs_ref`: per prompt, pi_ref's success rate p_ref against the last checkpoint's p (each
  seed, and the mean over seeds), and whether the point lies above, on or below the diagonal;
* `shares`: the share of prompts above / on / below the diagonal;
* `paired_diffs`: the mean over prompts of final - p_ref with a 95% interval: per seed a paired
  bootstrap over prompts, pooled the crossed bootstrap over seeds and prompts, and the number of
  seeds whose difference is positive.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from grpo_repro import stats
from grpo_repro.report.tables import final_rows, stable_seed, with_reference

SIDES = ("above", "on", "below")
ALL = "all"  # the `seed` label of rows pooled over GRPO seeds


def boot_seed(seed: int, *parts) -> int:
    """The bootstrap seed of one named group (the report's intervals, stable across runs)."""
    return int(np.random.SeedSequence(stable_seed(seed, *parts)).generate_state(1)[0])


def seed_prompt_matrix(g: pd.DataFrame, col: str) -> np.ndarray:
    """(seeds, prompts) matrix of `col` of one (variant, split, step) group."""
    return g.pivot_table(index="seed", columns="prompt_id", values=col).to_numpy()


#: the interval columns of amplification_mean.csv: strict and lenient (p_hat_lenient) answers
CI = ("mean", "low", "high", "mean_lenient", "low_lenient", "high_lenient")


def mean_by_step(long: pd.DataFrame, n_boot: int, seed: int) -> pd.DataFrame:
    """variant, seed, split, step, checkpoint, n_seeds, n_prompts, mean, low, high, mean_lenient,
    low_lenient, high_lenient (the same resampling seed for each (split, step) so the step-0
    interval is identical across variants)."""
    rows = []
    for (variant, split, step), g in long.groupby(["variant", "split", "step"], sort=True):
        s = boot_seed(seed, "mean", split, int(step), variant if step > 0 else "ref")
        base = {
            "variant": variant,
            "split": split,
            "step": int(step),
            "checkpoint": int(g["checkpoint"].iloc[0]),
            "n_prompts": g["prompt_id"].nunique(),
        }
        strict = stats.crossed_bootstrap_ci(seed_prompt_matrix(g, "p_hat"), n_boot=n_boot, seed=s)
        lenient = stats.crossed_bootstrap_ci(
            seed_prompt_matrix(g, "p_hat_lenient"), n_boot=n_boot, seed=s
        )
        ci = dict(zip(CI, (*strict, *lenient)))
        rows.append({**base, "seed": ALL, "n_seeds": g["seed"].nunique(), **ci})
        for sd, h in g.groupby("seed", sort=True):
            strict = stats.bootstrap_mean_ci(h["p_hat"].to_numpy(), n_boot=n_boot, seed=s)
            lenient = stats.bootstrap_mean_ci(h["p_hat_lenient"].to_numpy(), n_boot=n_boot, seed=s)
            ci = dict(zip(CI, (*strict, *lenient)))
            rows.append({**base, "seed": str(sd), "n_seeds": 1, **ci})
    cols = ["variant", "seed", "split", "step", "checkpoint", "n_seeds", "n_prompts", *CI]
    return pd.DataFrame(rows)[cols]


def side(p_final, p_ref) -> np.ndarray:
    """'above' (p_final > p_ref), 'on' (equal: the same success rate) or 'below'."""
    p_final, p_ref = np.asarray(p_final, float), np.asarray(p_ref, float)
    return np.where(
        np.isclose(p_final, p_ref, rtol=0, atol=1e-12),
        "on",
        np.where(p_final > p_ref, "above", "below"),
    )


def final_vs_ref(long: pd.DataFrame) -> pd.DataFrame:
    """One row per (variant, seed, split, prompt), seed "all" for the mean over seeds: p_ref,
    p_final (last checkpoint), counts, side."""
    f = final_rows(with_reference(long))
    if f["p_ref"].isna().any():
        raise ValueError("final checkpoint has prompts without a pi_ref (step 0) row")
    keep = [
        "variant",
        "seed",
        "split",
        "step",
        "prompt_id",
        "samples",
        "successes_ref",
        "p_ref",
        "successes",
        "p_hat",
    ]
    per_seed = f[keep].assign(seed=f["seed"].astype(str))
    keys = ["variant", "split", "step", "prompt_id", "successes_ref", "p_ref"]
    pooled = (
        per_seed.groupby(keys, sort=True)
        .agg(samples=("samples", "sum"), successes=("successes", "sum"), p_hat=("p_hat", "mean"))
        .reset_index()
        .assign(seed=ALL)
    )
    out = pd.concat([per_seed, pooled[keep]], ignore_index=True)
    out = out.rename(
        columns={"successes": "successes_final", "p_hat": "p_final", "step": "final_step"}
    )
    out["side"] = side(out["p_final"], out["p_ref"])
    return out.sort_values(["variant", "seed", "split", "prompt_id"], kind="stable").reset_index(
        drop=True
    )


def shares(prompts: pd.DataFrame) -> pd.DataFrame:
    """variant, seed, split, n_prompts, n_above/on/below, share_above/on/below."""
    rows = []
    for (variant, seed, split), g in prompts.groupby(["variant", "seed", "split"], sort=True):
        n = len(g)
        row = {"variant": variant, "seed": seed, "split": split, "n_prompts": n}
        for s in SIDES:
            k = int((g["side"] == s).sum())
            row[f"n_{s}"] = k
            row[f"share_{s}"] = k / n
        rows.append(row)
    return pd.DataFrame(rows)


def paired_diffs(prompts: pd.DataFrame, n_boot: int, seed: int) -> pd.DataFrame:
    """Per (variant, split) and seed: mean p_ref, mean final p, mean of final - p_ref with a 95%
    interval; pooled rows (seed "all") use the crossed bootstrap over seeds and prompts and count
    the seeds whose mean difference is positive."""
    rows = []
    per_seed = prompts[prompts["seed"] != ALL]
    for (variant, split), g in per_seed.groupby(["variant", "split"], sort=True):
        g = g.assign(diff=g["p_final"] - g["p_ref"])
        d = seed_prompt_matrix(g, "diff")
        s = boot_seed(seed, "paired", split, variant)
        m, lo, hi = stats.crossed_bootstrap_ci(d, n_boot=n_boot, seed=s)
        base = {
            "variant": variant,
            "split": split,
            "final_step": int(g["final_step"].iloc[0]),
            "n_prompts": g["prompt_id"].nunique(),
            "mean_ref": float(g["p_ref"].mean()),
        }
        rows.append(
            {
                **base,
                "seed": ALL,
                "n_seeds": d.shape[0],
                "mean_final": float(g["p_final"].mean()),
                "mean_diff": m,
                "low": lo,
                "high": hi,
                "n_seeds_positive": int((d.mean(1) > 0).sum()),
                "method": "crossed bootstrap over seeds and prompts",
            }
        )
        for sd, h in g.groupby("seed", sort=True):
            diff = h["p_final"].to_numpy() - h["p_ref"].to_numpy()  # paired over prompts
            m, lo, hi = stats.bootstrap_mean_ci(diff, n_boot=n_boot, seed=s)
            rows.append(
                {
                    **base,
                    "seed": sd,
                    "n_seeds": 1,
                    "mean_final": float(h["p_final"].mean()),
                    "mean_diff": m,
                    "low": lo,
                    "high": hi,
                    "n_seeds_positive": int(m > 0),
                    "method": "paired bootstrap over prompts",
                }
            )
    return pd.DataFrame(rows)
