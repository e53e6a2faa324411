"""Measured per-prompt plateau of one run against the predicted fixed points (Thm 2-3: the stable
fixed point p* of p = h_{eps,p_ref}(p) reached from p_ref, and p*_G of h_G at the run's group size
G, dynamics.finite_group; Sec. 5 for dr_grpo: logit p* = logit p_ref + 1/beta, (1 - 1/G)/beta at
G; Thm 9 for two_kl: h's fixed points at alpha beta, grpo_repro.variants.Variant.fixed_point_beta;
Thm 5 for mirror: p -> 1), with two baselines.

Per prompt, `prompt_table` gives
  p_ref (pi_ref's success rate, fixed_point.ref_samples samples) with its Wilson interval;
  the predictions (beta_pred: the beta of the predicting map h): `kind` (fixed_point / two_cycle /
  not_converged, dynamics.prediction), p_pred
  (population p*) and p_pred_G (p*_G), each with an interval propagated from p_ref's (_lo, _hi);
  the plateau: p_plateau, the pooled success of the last two checkpoints, with its Wilson
  interval; `plateau` (the last two checkpoints' intervals overlap) and `converged` (the last
  three checkpoints' intervals overlap pairwise: the plateau has stopped moving);
  covered / covered_G (the plateau interval meets the prediction's interval);
  fluct_var: how much the plateau still moves, the variance of p over the last three checkpoints
  less its binomial part, in logit units (NaN unless 0.05 < p < 0.95);
  the mechanism: kl (sequence-level KL(pi || pi_ref) of the last checkpoint, fixed_point.kl),
  kl_gibbs (the Gibbs policy's KL at p*_G), kl_gibbs_measured (at the plateau), beta_eff and
  beta_eff_G (the beta whose fixed point of h, of h_G, the plateau is).
`trajectory_table` gives the mean success over the prompts with 0 < p_ref < 1 at every checkpoint
(step 0: p_ref), with its standard error: is the improvement monotone? Aggregation over prompts
and seeds: grpo_repro.fixed_point.aggregate.

The tabular control (the mechanism "a parametric policy shared across prompts"): the same
sampled GRPO update as training (each group of G whitened by its own mean and spread, or mean-only
for dr_grpo; mu Adam steps on the clipped surrogate; KL(pi || pi_ref), whose stationary points are
k3_ratio's) on a FREE per-prompt policy: two outcomes, success and failure, one logit per prompt
(grpo_repro.dynamics.oracle_sgd), started at each prompt's measured p_ref. Its plateau (the mean
over the second half of the batches) against p*_G says how much of a gap the update and its
sampling noise leave by themselves. Whatever gap the language model shows beyond it comes from
what the tabular policy lacks: a parametric policy over token sequences, shared across prompts.
`logit_sd` is the plateau's fluctuation (the standard deviation of logit p over the second half),
to compare with the trained model's between its last checkpoints (`fluct_var`).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from grpo_repro import stats
from grpo_repro import variants as reg
from grpo_repro.dynamics import oracle_sgd
from grpo_repro.dynamics import prediction as pred
from grpo_repro.dynamics.oracle import Problem, log_normalise
from grpo_repro.fixed_point.runs import Run


def predict(
    variant: str, p_ref, beta: float, eps: float, lo, hi, group_size=None, alpha=None
) -> pd.DataFrame:
    """kind, p_pred, p_pred_lo, p_pred_hi for each p_ref (interval ends lo, hi of p_ref);
    group_size G: the finite-group prediction (None: the population's); alpha: a two-KL run's."""
    p_ref = np.asarray(p_ref, float)
    kind = np.full(p_ref.shape, "absorbing", dtype=object)
    point, p_lo, p_hi = p_ref.copy(), p_ref.copy(), p_ref.copy()
    inner = (p_ref > 0) & (p_ref < 1)  # boundaries absorbing: h = 0 at p_ref = 0, 1 at p_ref = 1
    base = reg.plateau_base(variant)
    if base is None:  # pi_{n-1} anchor, Thm 5: increasing, no interior fixed point, p -> 1
        kind[p_ref > 0] = "limit_one"
        point = p_lo = p_hi = np.where(p_ref > 0, 1.0, 0.0)
    elif inner.any():
        beta = reg.get(variant).fixed_point_beta(beta, alpha)
        kw = dict(group_size=group_size, variant=base.name)
        lim = pred.orbit_limits(p_ref[inner], beta, eps, **kw)
        kind[inner] = lim["kind"]
        point[inner] = np.where(lim["kind"] == "two_cycle", (lim["a"] + lim["b"]) / 2, lim["a"])
        a = np.maximum(np.asarray(lo, float)[inner], 1e-6)
        b = np.minimum(np.maximum(np.asarray(hi, float)[inner], a), 1 - 1e-6)
        iv = pred.p_star_intervals(a, b, beta, eps, **kw)
        p_lo[inner], p_hi[inner] = iv["lo"], iv["hi"]
    return pd.DataFrame({"kind": kind, "p_pred": point, "p_pred_lo": p_lo, "p_pred_hi": p_hi})


def _overlap(lo_a, hi_a, lo_b, hi_b) -> np.ndarray:
    return (np.asarray(lo_a) <= np.asarray(hi_b)) & (np.asarray(lo_b) <= np.asarray(hi_a))


def prompt_table(
    ref: pd.DataFrame, checkpoints: pd.DataFrame, kl: pd.DataFrame, run: Run, eps: float, g: int
) -> pd.DataFrame:
    """One row per prompt of one run (see the module doc). ref: pi_ref's evaluation table;
    checkpoints: the run's evaluation tables (column step); kl: fixed_point.kl.kl_table;
    g: the run's group size."""
    r = ref.set_index("prompt_id")
    ids = list(r.index)
    steps = sorted(checkpoints["step"].unique())
    at = {s: checkpoints[checkpoints["step"] == s].set_index("prompt_id").loc[ids] for s in steps}
    last = [at[s] for s in steps[-2:]]
    succ = sum(x["successes"].to_numpy() for x in last)
    n = sum(x["samples"].to_numpy() for x in last)
    out = pd.DataFrame(
        {
            "prompt_id": ids,
            "p_ref": r["p_hat"].to_numpy(),
            "p_ref_lo": r["ci_low"].to_numpy(),
            "p_ref_hi": r["ci_high"].to_numpy(),
            "ref_samples": r["samples"].to_numpy(),
        }
    )
    args = (run.variant, out["p_ref"], run.beta, eps, out["p_ref_lo"], out["p_ref_hi"])
    out = pd.concat([out, predict(*args, alpha=run.alpha)], axis=1)
    g_pred = predict(*args, group_size=g, alpha=run.alpha).drop(columns="kind")
    out = pd.concat([out, g_pred.add_suffix("_G").rename(columns=lambda c: _g_name(c))], axis=1)
    out["p_plateau"] = succ / n
    out["plateau_samples"] = n
    out["plateau_lo"], out["plateau_hi"] = stats.wilson(succ, n)
    a, b = last[0], last[-1]
    out["plateau"] = _overlap(a["ci_low"], a["ci_high"], b["ci_low"], b["ci_high"])
    tail = [at[s] for s in steps[-3:]]
    out["converged"] = np.all(
        [_overlap(x["ci_low"], x["ci_high"], y["ci_low"], y["ci_high"]) for x, y in _pairs(tail)],
        axis=0,
    )
    out["fluct_var"] = _fluct_var(
        np.stack([x["p_hat"].to_numpy(float) for x in tail]),
        np.stack([x["samples"].to_numpy(float) for x in tail]),
    )
    out["plateau_steps"] = f"{steps[-2:][0]}-{steps[-1]}"
    for side in ("", "_G"):
        lo, hi = out[f"p_pred{side}_lo"], out[f"p_pred{side}_hi"]
        out[f"covered{side}"] = _overlap(out["plateau_lo"], out["plateau_hi"], lo, hi)
    k = kl.set_index("prompt_id").loc[ids]
    out["kl"], out["kl_se"] = k["kl"].to_numpy(), k["kl_se"].to_numpy()
    out["kl_gibbs"] = pred.gibbs_kl(out["p_pred_G"], out["p_ref"])
    out["kl_gibbs_measured"] = pred.gibbs_kl(out["p_plateau"], out["p_ref"])
    out["beta_eff"] = pred.beta_eff(out["p_plateau"], out["p_ref"], eps)
    out["beta_eff_G"] = pred.beta_eff(out["p_plateau"], out["p_ref"], eps, group_size=g)
    meta = {"run": run.kind, "variant": run.variant, "setting": run.setting or "base"}
    beta_pred = reg.get(run.variant).fixed_point_beta(run.beta, run.alpha)
    beta_pred = np.nan if beta_pred is None else beta_pred
    return out.assign(**meta, G=g, beta=run.beta, seed=run.seed, beta_pred=beta_pred)


def trajectory_table(ref: pd.DataFrame, checkpoints: pd.DataFrame, run: Run) -> pd.DataFrame:
    """One row per checkpoint (step 0: pi_ref) of one run: the mean success over the prompts with
    0 < p_ref < 1 and its standard error, sqrt(sum p (1 - p) / n) / n_prompts (binomial)."""
    r = ref.set_index("prompt_id")
    ids = list(r.index[(r["p_hat"] > 0) & (r["p_hat"] < 1)])
    tables = {0: r.loc[ids]}
    for s in sorted(checkpoints["step"].unique()):
        tables[int(s)] = checkpoints[checkpoints["step"] == s].set_index("prompt_id").loc[ids]
    rows = []
    for step, t in tables.items():
        p, n = t["p_hat"].to_numpy(float), t["samples"].to_numpy(float)
        se = float(np.sqrt(np.sum(p * (1 - p) / n)) / max(len(p), 1))
        rows.append({"step": step, "p_mean": float(p.mean()) if len(p) else np.nan, "se": se})
    meta = {"run": run.kind, "variant": run.variant, "beta": run.beta, "seed": run.seed}
    return pd.DataFrame(rows).assign(**meta)[[*meta, "step", "p_mean", "se"]]


def _fluct_var(p: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Per prompt (column): the variance of p_hat over the checkpoints (rows) less the binomial
    variance of its samples, in logit units (delta method: / (p (1 - p))^2)."""
    m = p.mean(axis=0)
    if p.shape[0] < 2:
        return np.full(m.shape, np.nan)
    inner = (m > 0.05) & (m < 0.95)
    mm = np.where(inner, m * (1 - m), 1.0)
    v = (p.var(axis=0, ddof=1) - np.mean(mm / n, axis=0)) / mm**2
    return np.where(inner, v, np.nan)


def _g_name(col: str) -> str:
    """p_pred_lo_G -> p_pred_G_lo (the interval ends of p*_G next to p_pred's)."""
    for end in ("_lo", "_hi"):
        if col == f"p_pred{end}_G":
            return f"p_pred_G{end}"
    return col


def _pairs(items):
    return list(itertools.combinations(items, 2)) or [(items[0], items[0])]


def control(
    ref: pd.DataFrame,
    variant: str,
    beta: float,
    eps: float,
    group_size: int,
    mu: int,
    clip_eps: float | None,
    lr: float,
    n_iter: int,
    seed: int,
) -> pd.DataFrame:
    """Per prompt of pi_ref's table `ref` (prompt_id, p_hat) with 0 < p_ref < 1: p_ref, p*_G, the
    tabular policy's plateau p_tabular and its logit_sd."""
    ref = ref[(ref["p_hat"] > 0) & (ref["p_hat"] < 1)].reset_index(drop=True)
    p_ref = ref["p_hat"].to_numpy(float)
    n = len(p_ref)
    problem = Problem(
        log_normalise(np.log(np.stack([p_ref, 1.0 - p_ref], axis=1))),
        np.tile([1.0, 0.0], (n, 1)),
        np.array(["random"] * n),
    )
    settings = oracle_sgd.SGDSettings(
        variant=variant,
        beta=beta,
        smoothing_eps=eps,
        G=group_size,
        mu=mu,
        lr=lr,
        clip_eps=clip_eps,
        kl="exact",
        optimizer="adam",
        n_iter=n_iter,
        seed=seed,
    )
    tail = oracle_sgd.run(problem, settings)["p"][n_iter // 2 :]
    tail = np.clip(tail, 1e-12, 1 - 1e-12)
    target = predict(variant, p_ref, beta, eps, p_ref, p_ref, group_size=group_size)["p_pred"]
    return pd.DataFrame(
        {
            "prompt_id": ref["prompt_id"],
            "variant": variant,
            "beta": beta,
            "G": group_size,
            "lr": lr,
            "n_iter": n_iter,
            "p_ref": p_ref,
            "p_pred_G": target.to_numpy(),
            "p_tabular": tail.mean(axis=0),
            "logit_sd": np.log(tail / (1 - tail)).std(axis=0),
        }
    )
