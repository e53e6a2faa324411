"""How finely a fixed-point study resolves the law (Thm 2-3 at finite group size G: the plateau at
p*_G of h_G) against the better of the two baselines ("stays at p_ref", "goes to 1"), by a
parametric resampling of its per-prompt table (compare.prompt_table's rows) at its own and at
smaller sample and prompt counts: does the verdict need the counts it was given?

One resample at (samples m per checkpoint, k prompts): k prompts drawn with replacement (a prompt
keeps all its seeds' rows); each p_ref re-measured with its own sample count and each plateau with
2 m samples (the last two checkpoints), both binomial from the measured values; p*_G recomputed
from the resampled p_ref (dynamics.prediction.limits_from_ref, the map the study predicts with); then
the mean absolute gaps to p*_G and to the better baseline, and their difference d = better - p*_G.
`resolution_table` gives one row per (m, k): the mean gaps, d's median and 95% interval, the share
of resamples with d > 0 (`share_resolved`: the law beats the better baseline) and with p*_G's gap
below 1/3 of the better baseline's (`share_ratio`, aggregate.AIM_RATIO); `resolved`: d's interval
lies above 0. The row at the study's own counts is its verdict's interval.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from grpo_repro import variants as reg
from grpo_repro.dynamics import prediction as pred
from grpo_repro.fixed_point.aggregate import AIM_RATIO


def _limits(p_ref: np.ndarray, g: pd.DataFrame, eps: float, group_size) -> np.ndarray:
    """p*_G (group_size G; None: p* of h) of each resampled p_ref; the boundaries absorbing."""
    base = reg.plateau_base(g["variant"].iloc[0]).name
    beta = float(g["beta_pred"].iloc[0])
    return pred.limits_from_ref(p_ref, beta, eps, group_size=group_size, variant=base)


def resample(
    g: pd.DataFrame, m: int, k: int, eps: float, n: int, rng: np.random.Generator, group_size
) -> dict:
    """n resamples of one run's rows `g` (0 < p_ref < 1) at m samples per checkpoint and k
    prompts: arrays of the gap to p*_G and to the better baseline (see the module doc)."""
    ids = g["prompt_id"].unique()
    rows = {pid: np.flatnonzero(g["prompt_id"].to_numpy() == pid) for pid in ids}
    picks = rng.integers(0, len(ids), size=(n, k))
    idx = np.stack([np.concatenate([rows[ids[j]] for j in pick]) for pick in picks])
    n_ref = g["ref_samples"].to_numpy(int)[idx]
    p_ref = rng.binomial(n_ref, g["p_ref"].to_numpy()[idx]) / n_ref
    plateau = rng.binomial(2 * m, g["p_plateau"].to_numpy()[idx]) / (2 * m)
    p_g = _limits(p_ref, g, eps, group_size)
    gap_g = np.abs(plateau - p_g).mean(axis=1)
    better = np.minimum(np.abs(plateau - p_ref).mean(axis=1), np.abs(1 - plateau).mean(axis=1))
    return {"gap_pred_G": gap_g, "gap_better": better}


def resolution_table(
    prompts: pd.DataFrame,
    eps: float,
    samples: list[int],
    prompt_counts: list[int] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    group_size: str | None = "run",
) -> pd.DataFrame:
    """One row per (run, beta, samples m, prompts k): see the module doc. prompt_counts: None, the
    study's own prompt count only; group_size "run": each run's G (p*_G), None: the population
    map h (p*), the wrong prediction for a finite group."""
    out = []
    for (run, beta), g in prompts.groupby(["run", "beta"], sort=True):
        g = g[(g["p_ref"] > 0) & (g["p_ref"] < 1)].reset_index(drop=True)
        if g.empty or reg.plateau_base(g["variant"].iloc[0]) is None:
            continue
        own_m = int(g["plateau_samples"].iloc[0]) // 2
        own_k = g["prompt_id"].nunique()
        G = int(g["G"].iloc[0]) if group_size == "run" else None
        for m in sorted({*samples, own_m}):
            for k in sorted({*(prompt_counts or []), own_k}):
                rng = np.random.default_rng([seed, m, k])
                r = resample(g, m, k, eps, n_resamples, rng, G)
                d = r["gap_better"] - r["gap_pred_G"]
                lo, med, hi = np.quantile(d, [0.025, 0.5, 0.975])
                out.append(
                    {
                        "run": run,
                        "beta": beta,
                        "G": int(g["G"].iloc[0]),
                        "prediction": "p*_G" if G else "p*",
                        "samples": m,
                        "prompts": k,
                        "own": m == own_m and k == own_k,
                        "gap_pred_G": float(r["gap_pred_G"].mean()),
                        "gap_better": float(r["gap_better"].mean()),
                        "diff": float(med),
                        "diff_lo": float(lo),
                        "diff_hi": float(hi),
                        "share_resolved": float((d > 0).mean()),
                        "share_ratio": float(
                            (r["gap_pred_G"] < AIM_RATIO * r["gap_better"]).mean()
                        ),
                        "resolved": bool(lo > 0),
                    }
                )
    return pd.DataFrame(out)
