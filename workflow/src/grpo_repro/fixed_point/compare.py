"""Measured per-prompt plateau against the predicted fixed point (Thm 2-3: the stable fixed point p*
of p = h_{eps,p_ref}(p) reached from p_ref; Thm 5 for mirror: p -> 1), with two baselines.

Per (run, beta, prompt), `prompt_table` gives
  p_ref (pi_ref's success rate, fixed_point.ref_samples samples) with its Wilson interval;
  the prediction: `kind` (fixed_point / two_cycle / not_converged, dynamics.prediction), p_pred
  (grpo: p*; mirror: 1) and p_pred_lo / p_pred_hi (p* propagated from p_ref's interval);
  the plateau: p_plateau, the pooled success of the last two checkpoints, with its Wilson
  interval, and `plateau` (the two checkpoints' intervals overlap: success has levelled off);
  covered (the plateau interval meets [p_pred_lo, p_pred_hi]);
  the mechanism: kl (sequence-level KL(pi || pi_ref) of the last checkpoint, grpo_repro.fixed_point.kl),
  kl_gibbs (the Gibbs policy's KL at the prediction, Bernoulli KL), kl_gibbs_measured (at the
  plateau: the least KL that reaches it), beta_eff (the beta whose fixed point is the plateau).
`summary_table` aggregates per (run, beta): mean absolute gap to the prediction and to each baseline
(with percentile bootstrap intervals over prompts), Spearman rank correlations, the share of
prompts whose interval covers each, the share at a plateau, median beta_eff, mean KLs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from grpo_repro import stats
from grpo_repro.dynamics import prediction as pred

BASELINES = ("stays", "to_one")  # p stays at p_ref; p goes to 1


def predict(variant: str, p_ref, beta: float, eps: float, lo, hi) -> pd.DataFrame:
    """kind, p_pred, p_pred_lo, p_pred_hi for each p_ref (interval ends lo, hi of p_ref)."""
    p_ref = np.asarray(p_ref, float)
    rows = []
    for p, a, b in zip(p_ref, lo, hi):
        if variant.startswith("mirror"):  # Thm 5: increasing, no interior fixed point, p -> 1
            v = 0.0 if p == 0 else 1.0
            rows.append(("limit_one" if p > 0 else "absorbing", v, v, v))
            continue
        if p <= 0 or p >= 1:  # absorbing boundaries (h = 0 at p_ref = 0, 1 at p_ref = 1)
            rows.append(("absorbing", p, p, p))
            continue
        kind, val = pred.limit_from(p, beta, eps)
        point = val if kind != "two_cycle" else float(np.mean(val))
        iv = pred.p_star_interval(max(a, 1e-6), min(max(b, a), 1 - 1e-6), beta, eps)
        rows.append((kind, point, iv["lo"], iv["hi"]))
    return pd.DataFrame(rows, columns=["kind", "p_pred", "p_pred_lo", "p_pred_hi"])


def prompt_table(
    ref: pd.DataFrame,
    checkpoints: pd.DataFrame,
    kl: pd.DataFrame,
    variant: str,
    beta: float,
    eps: float,
) -> pd.DataFrame:
    """One row per prompt of one run (see the module doc). ref: pi_ref's evaluation table;
    checkpoints: the run's evaluation tables (column step); kl: grpo_repro.fixed_point.kl.kl_table."""
    r = ref.set_index("prompt_id")
    steps = sorted(checkpoints["step"].unique())[-2:]
    last = [checkpoints[checkpoints["step"] == s].set_index("prompt_id") for s in steps]
    ids = list(r.index)
    succ = sum(x.loc[ids, "successes"].to_numpy() for x in last)
    n = sum(x.loc[ids, "samples"].to_numpy() for x in last)
    out = pd.DataFrame(
        {
            "prompt_id": ids,
            "p_ref": r["p_hat"].to_numpy(),
            "p_ref_lo": r["ci_low"].to_numpy(),
            "p_ref_hi": r["ci_high"].to_numpy(),
        }
    )
    out = pd.concat(
        [out, predict(variant, out["p_ref"], beta, eps, out["p_ref_lo"], out["p_ref_hi"])], axis=1
    )
    out["p_plateau"] = succ / n
    out["plateau_lo"], out["plateau_hi"] = stats.wilson(succ, n)
    a, b = last[0].loc[ids], last[-1].loc[ids]
    out["plateau"] = (a["ci_low"].to_numpy() <= b["ci_high"].to_numpy()) & (
        b["ci_low"].to_numpy() <= a["ci_high"].to_numpy()
    )
    out["plateau_steps"] = f"{steps[0]}-{steps[-1]}"
    out["covered"] = (out["plateau_lo"] <= out["p_pred_hi"]) & (
        out["p_pred_lo"] <= out["plateau_hi"]
    )
    k = kl.set_index("prompt_id").loc[ids]
    out["kl"], out["kl_se"] = k["kl"].to_numpy(), k["kl_se"].to_numpy()
    out["kl_gibbs"] = pred.gibbs_kl(out["p_pred"], out["p_ref"])
    out["kl_gibbs_measured"] = pred.gibbs_kl(out["p_plateau"], out["p_ref"])
    out["beta_eff"] = pred.beta_eff(out["p_plateau"], out["p_ref"], eps)
    return out


def _rank(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) < 3 or np.unique(a).size < 2 or np.unique(b).size < 2:
        return float("nan")
    return float(spearmanr(a, b).statistic)


def _gap_ci(gaps, n_boot: int, seed: int) -> tuple[float, float, float]:
    return stats.bootstrap_mean_ci(gaps, n_boot=n_boot, seed=seed) if len(gaps) else (np.nan,) * 3


def summary_table(prompts: pd.DataFrame, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Per (run, beta) over the prompts with an interior prediction (0 < p_ref < 1)."""
    rows = []
    for (run, beta), g in prompts.groupby(["run", "beta"], sort=True):
        g = g[(g["p_ref"] > 0) & (g["p_ref"] < 1)]
        p = g["p_plateau"].to_numpy()
        gaps = {
            "prediction": np.abs(p - g["p_pred"]),
            "stays": np.abs(p - g["p_ref"]),
            "to_one": np.abs(p - 1.0),
        }
        row = {
            "run": run,
            "beta": beta,
            "n_prompts": len(g),
            "n_interior_prediction": int(((g["p_pred"] > 0.01) & (g["p_pred"] < 0.99)).sum()),
            "share_plateau": float(g["plateau"].mean()) if len(g) else np.nan,
            "kinds": ",".join(sorted(g["kind"].unique())),
        }
        for name, gap in gaps.items():
            m, lo, hi = _gap_ci(np.asarray(gap, float), n_boot, seed)
            row.update({f"gap_{name}": m, f"gap_{name}_lo": lo, f"gap_{name}_hi": hi})
        best = min(row["gap_stays"], row["gap_to_one"])
        row["gap_ratio_to_best_baseline"] = row["gap_prediction"] / best if best > 0 else np.nan
        row["spearman_prediction"] = _rank(g["p_pred"], p)
        row["spearman_p_ref"] = _rank(g["p_ref"], p)
        row["covered_prediction"] = float(g["covered"].mean()) if len(g) else np.nan
        row["covered_stays"] = float(
            ((g["plateau_lo"] <= g["p_ref"]) & (g["p_ref"] <= g["plateau_hi"])).mean()
        )
        row["covered_to_one"] = float((g["plateau_hi"] >= 1.0 - 1e-12).mean())
        row["beta_eff_median"] = (
            float(np.nanmedian(g["beta_eff"])) if g["beta_eff"].notna().any() else np.nan
        )
        row["kl_mean"] = float(g["kl"].mean())
        row["kl_gibbs_mean"] = float(g["kl_gibbs"].mean())
        row["kl_gibbs_measured_mean"] = float(g["kl_gibbs_measured"].mean())
        rows.append(row)
    return pd.DataFrame(rows)
