"""The fixed-point test per (run, beta) over seeds and prompts (Thm 2-3 at the population and at
finite group size; the study's aims), from compare.prompt_table's rows.

`summary_table`, one row per (run, beta) over the prompts with 0 < p_ref < 1:
  gap_{pred, pred_G, stays, to_one}: mean absolute gap of the plateau to p*, p*_G and the two
  baselines, averaged over seeds, with a crossed bootstrap 95% interval over seeds x prompts
  (stats.crossed_bootstrap_ci); gap_pred_G_seeds: the per-seed values;
  signed_pred_G: mean (plateau - p*_G) (its sign: the plateau sits above or below p*_G);
  floor_G: the sampling-noise floor, the mean absolute gap an EXACT prediction would show given
  the sample sizes (`noise_floor`); ratio_G: gap_pred_G / the better baseline's gap, with its
  crossed bootstrap interval (the same draws as the gaps'); aim: the study's aim, fixed before any
  run (gap_pred_G <= AIM_ABS and ratio_G < AIM_RATIO), decided by the intervals (`aim_verdict`):
  met, missed, or not resolved at this precision;
  share_plateau, share_converged (last two / three checkpoints agree), Spearman correlations,
  coverage shares, median beta_eff (h) and beta_eff_G (h_G), mean KLs, mean plateau and p*_G;
  for mean-only variants (dr_grpo) `law_fit`: the regression of logit(plateau) on logit(p_ref)
  (slope, intercept, crossed bootstrap intervals) beside the finite-G law's (1 - 1/G)/beta;
  with the runs' trajectories (compare.trajectory_table), `monotonicity`: the mean success at
  every checkpoint pooled over seeds, its largest drop and whether every drop is within noise.

How finely a study resolves the law (Thm 2-3 at finite group size G: the plateau at p*_G of h_G)
against the better of the two baselines ("stays at p_ref", "goes to 1"), by a parametric
resampling of its per-prompt table (compare.prompt_table's rows) at its own and at smaller sample
and prompt counts: does the verdict need the counts it was given? One resample at (samples m per
checkpoint, k prompts): k prompts drawn with replacement (a prompt keeps all its seeds' rows); each
p_ref re-measured with its own sample count and each plateau with 2 m samples (the last two
checkpoints), both binomial from the measured values; p*_G recomputed from the resampled p_ref
(dynamics.prediction.limits_from_ref, the map the study predicts with); then the mean absolute
gaps to p*_G and to the better baseline, and their difference d = better - p*_G.
`resolution_table` gives one row per (m, k): the mean gaps, d's median and 95% interval, the share
of resamples with d > 0 (`share_resolved`: the law beats the better baseline) and with p*_G's gap
below 1/3 of the better baseline's (`share_ratio`, AIM_RATIO); `resolved`: d's interval lies above
0. The row at the study's own counts is its verdict's interval.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import logit
from scipy.stats import spearmanr

from grpo_repro import stats
from grpo_repro import variants as reg
from grpo_repro.dynamics import prediction as pred

AIM_ABS = 0.03  # the aim's largest mean absolute gap to p*_G: fixed before any run, never widened
AIM_RATIO = 1 / 3  # ... and the largest share of the better baseline's gap
MET, MISSED, UNRESOLVED = "met", "missed", "not resolved at this precision"
MONOTONE_Z = 2.0  # a drop of the mean success larger than this many standard errors: not monotone


def linear_law(variant: str) -> bool:
    """Whether Sec. 5's linear law, logit p*_G = logit p_ref + (1 - 1/G)/beta, predicts the variant's
    plateau: its record anchors on pi_ref with the mean-only advantage (Dr. GRPO)."""
    v = reg.get(variant)
    return v.ref_anchored and v.mean_only


def _matrix(g: pd.DataFrame, values) -> np.ndarray:
    """seeds x prompts matrix of `values` (a Series aligned with g)."""
    return g.assign(v=values).pivot(index="seed", columns="prompt_id", values="v").to_numpy()


def _ci(g, values, n_boot, seed) -> tuple[float, float, float]:
    m = _matrix(g, np.asarray(values, float))
    return stats.crossed_bootstrap_ci(m, n_boot=n_boot, seed=seed) if m.size else (np.nan,) * 3


def _ratio_ci(g, gaps: dict, n_boot, seed) -> tuple[float, float]:
    """The 95% interval of gap_pred_G / min(gap_stays, gap_to_one), bootstrapped with the gaps'
    own draws (the seed of `_ci`)."""
    mats = [_matrix(g, np.asarray(gaps[k], float)) for k in ("pred_G", "stays", "to_one")]
    if not mats[0].size:
        return np.nan, np.nan
    draws = stats.crossed_bootstrap_means(mats, n_boot, seed)
    better = np.minimum(draws[1], draws[2])
    ratio = np.divide(draws[0], better, out=np.full_like(better, np.inf), where=better > 0)
    lo, hi = np.quantile(ratio, [0.025, 0.975])
    return float(lo), float(hi)


def aim_verdict(gap_lo, gap_hi, ratio_lo, ratio_hi) -> str:
    """The aim (gap to p*_G <= AIM_ABS and under AIM_RATIO of the better baseline's) decided by the
    intervals: met when both intervals lie inside, missed when either lies outside, else not
    resolved at this precision (a point estimate near a threshold decides nothing)."""
    if gap_lo > AIM_ABS or ratio_lo >= AIM_RATIO:
        return MISSED
    if gap_hi <= AIM_ABS and ratio_hi < AIM_RATIO:
        return MET
    return UNRESOLVED


def _rank(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) < 3 or np.unique(a).size < 2 or np.unique(b).size < 2:
        return float("nan")
    return float(spearmanr(a, b).statistic)


def noise_floor(g: pd.DataFrame, eps: float, n_sim: int = 200, seed: int = 0) -> float:
    """Mean absolute gap of an exact p*_G prediction: each prompt's true p_ref is its measured
    one and its true plateau is p*_G(p_ref); p_ref is re-measured with its sample count, the
    prediction recomputed from it, the plateau re-measured with its own; averaged over n_sim."""
    variant = g["variant"].iloc[0]
    if g.empty or reg.plateau_base(variant) is None:
        return float("nan")
    base = reg.plateau_base(variant).name
    rng = np.random.default_rng(seed)
    n_ref, n_pl = g["ref_samples"].to_numpy(int), g["plateau_samples"].to_numpy(int)
    p_ref_sim = rng.binomial(n_ref, g["p_ref"].to_numpy(), size=(n_sim, len(g))) / n_ref
    plateau_sim = rng.binomial(n_pl, g["p_pred_G"].to_numpy(), size=(n_sim, len(g))) / n_pl
    beta, group_size = g["beta_pred"].iloc[0], int(g["G"].iloc[0])
    p_sim = pred.limits_from_ref(p_ref_sim, beta, eps, group_size=group_size, variant=base)
    return float(np.abs(plateau_sim - p_sim).mean())


def _continuity_logit(p, n) -> np.ndarray:
    """logit of (successes + 1/2)/(n + 1): finite at 0 and 1."""
    return logit((np.asarray(p) * n + 0.5) / (n + 1))


def law_fit(g: pd.DataFrame, n_boot: int, seed: int) -> dict:
    """OLS of logit(plateau) on logit(p_ref) over seeds x prompts, with a crossed bootstrap; and
    the intercept at slope 1 (mean logit gap)."""
    x = _matrix(g, logit(g["p_ref"].to_numpy()))
    y = _matrix(g, _continuity_logit(g["p_plateau"], g["plateau_samples"].to_numpy()))

    def fit(xs, ys):
        dx = xs - xs.mean()
        var = (dx**2).mean()
        slope = ((dx * (ys - ys.mean())).mean() / var) if var > 0 else np.nan
        return slope, ys.mean() - slope * xs.mean(), float((ys - xs).mean())

    point = fit(x, y)
    rng = np.random.default_rng(seed)
    s, p = x.shape
    boots = []
    for _ in range(n_boot):
        rows = rng.integers(0, s, size=s) if s > 1 else np.zeros(1, int)
        cols = rng.integers(0, p, size=p)
        boots.append(fit(x[np.ix_(rows, cols)], y[np.ix_(rows, cols)]))
    lo, hi = np.quantile(np.array(boots), [0.025, 0.975], axis=0)
    names = ("law_slope", "law_intercept", "law_shift")
    out = {n: float(v) for n, v in zip(names, point)}
    out.update({f"{n}_lo": float(v) for n, v in zip(names, lo)})
    out.update({f"{n}_hi": float(v) for n, v in zip(names, hi)})
    return out


def monotonicity(traj: pd.DataFrame) -> dict:
    """One run's trajectory (rows of compare.trajectory_table, every seed) pooled over seeds: the
    mean success at each step ("/"-joined, step 0 = p_ref), the largest drop between consecutive
    checkpoints and `monotone`: no drop beyond MONOTONE_Z standard errors of the difference."""
    by = traj.groupby("step", sort=True)
    m = by["p_mean"].mean().to_numpy()
    # the pooled mean's standard error: sqrt(sum of the seeds' se^2) / n_seeds
    se = np.sqrt(by["se"].apply(lambda x: np.sum(np.square(x))).to_numpy()) / by.size().to_numpy()
    d, tol = np.diff(m), MONOTONE_Z * np.sqrt(se[1:] ** 2 + se[:-1] ** 2)
    return {
        "trajectory": "/".join(f"{x:.3f}" for x in m),
        "drop_max": float(max(0.0, -d.min())) if d.size else 0.0,
        "monotone": bool(np.all(d >= -tol)),
    }


def summary_table(
    prompts: pd.DataFrame,
    eps: float,
    n_boot: int = 1000,
    seed: int = 0,
    trajectories: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Per (run, beta): see the module doc."""
    rows = []
    for (run, beta), g in prompts.groupby(["run", "beta"], sort=True):
        g = g[(g["p_ref"] > 0) & (g["p_ref"] < 1)].reset_index(drop=True)
        p = g["p_plateau"]
        gaps = {
            "pred": (p - g["p_pred"]).abs(),
            "pred_G": (p - g["p_pred_G"]).abs(),
            "stays": (p - g["p_ref"]).abs(),
            "to_one": (1.0 - p).abs(),
        }
        row = {
            "run": run,
            "variant": g["variant"].iloc[0],
            "setting": g["setting"].iloc[0],
            "G": int(g["G"].iloc[0]),
            "beta": beta,
            "beta_pred": float(g["beta_pred"].iloc[0]),
            "n_seeds": g["seed"].nunique(),
            "n_prompts": g["prompt_id"].nunique(),
            "share_plateau": float(g["plateau"].mean()),
            "share_converged": float(g["converged"].mean()),
            "kinds": ",".join(sorted(g["kind"].unique())),
            "plateau_steps": g["plateau_steps"].iloc[0],
        }
        for name, gap in gaps.items():
            m, lo, hi = _ci(g, gap, n_boot, seed)
            row.update({f"gap_{name}": m, f"gap_{name}_lo": lo, f"gap_{name}_hi": hi})
        per_seed = g.assign(v=gaps["pred_G"]).groupby("seed")["v"].mean()
        row["gap_pred_G_seeds"] = "/".join(f"{v:.3f}" for v in per_seed)
        m, lo, hi = _ci(g, p - g["p_pred_G"], n_boot, seed)
        row.update({"signed_pred_G": m, "signed_pred_G_lo": lo, "signed_pred_G_hi": hi})
        row["floor_G"] = noise_floor(g, eps, seed=seed)
        best = min(row["gap_stays"], row["gap_to_one"])
        row["ratio"] = row["gap_pred"] / best if best > 0 else np.nan
        row["ratio_G"] = row["gap_pred_G"] / best if best > 0 else np.nan
        row["ratio_G_lo"], row["ratio_G_hi"] = _ratio_ci(g, gaps, n_boot, seed)
        row["aim_gap_G"] = AIM_ABS
        row["aim"] = aim_verdict(
            row["gap_pred_G_lo"], row["gap_pred_G_hi"], row["ratio_G_lo"], row["ratio_G_hi"]
        )
        for name, col in (("pred", "p_pred"), ("pred_G", "p_pred_G"), ("p_ref", "p_ref")):
            row[f"spearman_{name}"] = _rank(g[col], p)
        for side in ("", "_G"):
            row[f"covered{side}"] = float(g[f"covered{side}"].mean())
        row["covered_stays"] = float(
            ((g["plateau_lo"] <= g["p_ref"]) & (g["p_ref"] <= g["plateau_hi"])).mean()
        )
        row["covered_to_one"] = float((g["plateau_hi"] >= 1.0 - 1e-12).mean())
        for col in ("beta_eff", "beta_eff_G"):
            row[f"{col}_median"] = float(np.nanmedian(g[col])) if g[col].notna().any() else np.nan
        fv = g["fluct_var"].to_numpy(float)
        row["logit_sd"] = (
            float(np.sqrt(max(np.nanmean(fv), 0.0))) if np.isfinite(fv).any() else np.nan
        )
        for col in ("kl", "kl_gibbs", "kl_gibbs_measured", "p_plateau", "p_pred", "p_pred_G"):
            row[f"{col}_mean"] = float(g[col].mean())
        if linear_law(row["variant"]):
            row.update(law_fit(g, n_boot, seed))
            row["law_intercept_G"] = (1 - 1 / row["G"]) / beta
            row["law_intercept_population"] = 1 / beta
        if trajectories is not None:
            t = trajectories[(trajectories["run"] == run) & (trajectories["beta"] == beta)]
            row.update(monotonicity(t))
        rows.append(row)
    return pd.DataFrame(rows)


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
