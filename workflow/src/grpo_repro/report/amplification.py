"""Success amplification measured on the evaluation tables (Thm 3: every fixed point p* > p_ref).

* `mean_by_step`: mean success over prompts at every (variant, split, step), with a percentile
  bootstrap 95% interval over prompts (grpo_repro.stats.bootstrap_mean_ci);
* `final_vs_ref`: per prompt, pi_ref's success rate p_ref against the last checkpoint's p, and
  whether the point lies above, on or below the diagonal;
* `shares`: the share of prompts above / on / below the diagonal;
* `paired_diffs`: mean of the per-prompt difference final - p_ref with a 95% interval
  (grpo_repro.stats.paired_diff_ci; pairs resampled together).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from grpo_repro import stats
from grpo_repro.report.tables import final_rows, stable_seed, with_reference

SIDES = ("above", "on", "below")


def _seed(seed: int, *parts) -> int:
    return int(np.random.SeedSequence(stable_seed(seed, *parts)).generate_state(1)[0])


def mean_by_step(long: pd.DataFrame, n_boot: int, seed: int) -> pd.DataFrame:
    """variant, split, step, checkpoint, n_prompts, mean, low, high, mean_lenient, low_lenient,
    high_lenient (bootstrap over prompts; the same resampling seed for each (split, step) so the
    step-0 interval is identical across variants)."""
    rows = []
    for (variant, split, step), g in long.groupby(["variant", "split", "step"], sort=True):
        s = _seed(seed, "mean", split, int(step), variant if step > 0 else "ref")
        m, lo, hi = stats.bootstrap_mean_ci(g["p_hat"].to_numpy(), n_boot=n_boot, seed=s)
        ml, lol, hil = stats.bootstrap_mean_ci(g["p_hat_lenient"].to_numpy(), n_boot=n_boot, seed=s)
        rows.append(
            {
                "variant": variant,
                "split": split,
                "step": int(step),
                "checkpoint": int(g["checkpoint"].iloc[0]),
                "n_prompts": len(g),
                "mean": m,
                "low": lo,
                "high": hi,
                "mean_lenient": ml,
                "low_lenient": lol,
                "high_lenient": hil,
            }
        )
    return pd.DataFrame(rows)


def side(p_final, p_ref) -> np.ndarray:
    """'above' (p_final > p_ref), 'on' (equal: the same success count) or 'below'."""
    p_final, p_ref = np.asarray(p_final, float), np.asarray(p_ref, float)
    return np.where(
        np.isclose(p_final, p_ref, rtol=0, atol=1e-12),
        "on",
        np.where(p_final > p_ref, "above", "below"),
    )


def final_vs_ref(long: pd.DataFrame) -> pd.DataFrame:
    """One row per (variant, split, prompt): p_ref, p_final (last checkpoint), counts, side."""
    f = final_rows(with_reference(long))
    if f["p_ref"].isna().any():
        raise ValueError("final checkpoint has prompts without a pi_ref (step 0) row")
    out = f[
        [
            "variant",
            "split",
            "step",
            "prompt_id",
            "samples",
            "successes_ref",
            "p_ref",
            "successes",
            "p_hat",
            "ci_low",
            "ci_high",
        ]
    ].rename(columns={"successes": "successes_final", "p_hat": "p_final", "step": "final_step"})
    out["side"] = side(out["p_final"], out["p_ref"])
    return out.reset_index(drop=True)


def shares(prompts: pd.DataFrame) -> pd.DataFrame:
    """variant, split, n_prompts, n_above/on/below, share_above/on/below."""
    rows = []
    for (variant, split), g in prompts.groupby(["variant", "split"], sort=True):
        n = len(g)
        row = {"variant": variant, "split": split, "n_prompts": n}
        for s in SIDES:
            k = int((g["side"] == s).sum())
            row[f"n_{s}"] = k
            row[f"share_{s}"] = k / n
        rows.append(row)
    return pd.DataFrame(rows)


def paired_diffs(prompts: pd.DataFrame, n_boot: int, seed: int) -> pd.DataFrame:
    """Per (variant, split): mean p_ref, mean final p, mean of final - p_ref with a paired bootstrap
    95% interval (pairs resampled together) and the normal-approximation interval beside it."""
    rows = []
    for (variant, split), g in prompts.groupby(["variant", "split"], sort=True):
        a, b = g["p_final"].to_numpy(), g["p_ref"].to_numpy()
        boot = stats.paired_diff_ci(
            a, b, method="bootstrap", n_boot=n_boot, seed=_seed(seed, "paired", split, variant)
        )
        norm = stats.paired_diff_ci(a, b, method="normal")
        rows.append(
            {
                "variant": variant,
                "split": split,
                "final_step": int(g["final_step"].iloc[0]),
                "n_prompts": len(g),
                "mean_ref": float(b.mean()),
                "mean_final": float(a.mean()),
                "mean_diff": boot["mean_diff"],
                "low": boot["low"],
                "high": boot["high"],
                "se": boot["se"],
                "low_normal": norm["low"],
                "high_normal": norm["high"],
                "method": "paired bootstrap over prompts",
            }
        )
    return pd.DataFrame(rows)
