"""Theory overlay: the probability-of-success recurrence each variant obeys (Sec. 3-5), started at
every prompt's measured p_ref, beside the measured checkpoints (the tables of rule report_overlay).

Recurrences (logit coordinates x = logit p, grpo_repro.dynamics), chosen by the variant's record
in grpo_repro.variants (KL anchor, mean-only or not):
  pi_ref, mean+std    (grpo, Thm 2)        x_n = logit p_ref + Omega(p_{n-1})/beta,
                                           Omega(p) = 1/sqrt(p(1-p)+eps)
  pi_{n-1}, mean+std  (mirror, Thm 5)      x_n = x_{n-1} + Omega(p_{n-1})/beta   -> p_n -> 1
  pi_ref, mean-only   (Dr. GRPO, Sec. 5)   x_n = logit p_ref + 1/beta  (fixed point after one step)
  pi_{n-1}, mean-only (Mirror Dr., Sec. 5) x_n = logit p_ref + n/beta            -> p_n -> 1
beta, eps and G are the training run's own (results/train/{variant}/seed_{seed}/run.json, key
"config"). The two-KL variant (Thm 9),
x_n = alpha logit p_ref + (1-alpha) x_{n-1} + Delta_R,n + Omega/beta, needs the Renyi term Delta_R,n
of each iteration, which checkpoint PoS do not measure: its predictions are NaN, with a note
(`no_prediction`). Each recurrence is predicted twice: with the population weights (h, the paper's
map) and with the finite-group weights at the run's group size G = train.num_generations (h_G,
grpo_repro.dynamics.finite_group: each group whitened by its own mean and spread; Dr. GRPO:
logit p_ref + (1 - 1/G)/beta), the map whose fixed point the fixed-point stage found closer to the
plateaus: columns `*_G` are h_G's; `closer` in the summary names the map whose
limit is nearer the final checkpoint (mean absolute gap over prompts).

Checkpoints are NOT iterations. One iteration of the paper is an exact KL-regularised argmax with
the advantage weights frozen at p_{n-1}; TRL instead takes mu (num_iterations) gradient steps on
each sampled batch, and a prompt is only revisited every n_epoch_prompts / prompts_per_step
batches, so a checkpoint is a partially optimised, parametric iterate (App. F, Thm 10:
|p~_n - p*| <= 2 delta* asymptotically). The overlay therefore compares
  * the measured last checkpoint with the predicted limit (fixed point / n -> infinity), and
  * the measured trajectory at checkpoint k = 1, 2, ... with the iterate n = k (a convention),
and records `nominal_iterations` = (step / mu) * prompts_per_step / n_epoch_prompts, the number of
sampled batches that contained a given training prompt by that step (an upper bound on the number
of advantage refreshes it received; test prompts are never trained on).

Spearman correlations are computed on predicted logits (rank-equivalent to p, without the
saturation of p at 1.0 in floating point). For the mean-only variants the prediction is an
increasing function of p_ref, so its rank correlation with the measured final p equals that of
p_ref itself (column spearman_p_ref, the baseline); mean+std iterates are not monotone in
p_ref (Omega = 1/sqrt(p(1-p)+eps) gives rare successes the largest first step); for mirror variants
the limit is 1 for every interior prompt and only separates p_ref = 0 from the rest.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy.special import expit
from scipy.stats import spearmanr

from grpo_repro import variants as reg
from grpo_repro.dynamics import fixed_points as fp
from grpo_repro.dynamics import maps as dynamics
from grpo_repro.dynamics import prediction as pred
from grpo_repro.report.tables import final_rows, select_prompts, with_reference


def train_params(run_config: dict) -> dict:
    t = run_config["train"]
    return {
        "G": int(t["num_generations"]),
        "beta": float(t["beta"]),
        "eps": float(t["smoothing_eps"]),
        "advantage": t["advantage"],
        "mu": int(t["num_iterations"]),
        "prompts_per_step": int(t["prompts_per_step"]),
    }


def note(variant: str, advantage: str) -> str:
    if no_prediction(variant):
        return (
            "two-KL: its recurrence (Thm 9) needs the Renyi term Delta_R of each iteration, which "
            "the checkpoints do not measure: no prediction"
        )
    if advantage == "trl" and not reg.get(variant).mean_only:  # TRL's std, not eq. (4)
        return (
            "trained with TRL's (r-mean)/(std+1e-4) advantage, not eq. (4): the recurrence with "
            "eps = smoothing_eps is an approximation"
        )
    return ""


def overlay_trajectories(
    long: pd.DataFrame, run_configs: dict, n_epoch_prompts: int, n_select: int, seed: int
) -> pd.DataFrame:
    """Measured p at every checkpoint beside the predicted iterate n = checkpoint index and the
    predicted limit, for every prompt; `selected` marks the seeded trajectory prompts."""
    df = with_reference(long)
    parts = []
    for (variant, split), g in df.groupby(["variant", "split"], sort=True):
        tp = train_params(run_configs[variant])
        g = g.sort_values(["prompt_id", "step"]).copy()
        ref = g[g["step"] == 0].set_index("prompt_id")["p_ref"]
        n_iter = int(g["checkpoint"].max())
        xs = iterates_logit(variant, ref.to_numpy(), tp["beta"], tp["eps"], n_iter)
        xl, conv = limit_logit(variant, ref.to_numpy(), tp["beta"], tp["eps"])
        pos = {pid: i for i, pid in enumerate(ref.index)}
        col = g["prompt_id"].map(pos).to_numpy()
        k = g["checkpoint"].to_numpy()
        g["pred_logit_iter"] = xs[k, col]
        g["p_pred_iter"] = expit(g["pred_logit_iter"])
        g["pred_logit_limit"] = xl[col]
        g["p_pred_limit"] = expit(g["pred_logit_limit"])
        g["limit_converged"] = conv[col]
        xs_g = iterates_logit(variant, ref.to_numpy(), tp["beta"], tp["eps"], n_iter, tp["G"])
        xl_g, conv_g = limit_logit(variant, ref.to_numpy(), tp["beta"], tp["eps"], tp["G"])
        g["p_pred_iter_G"] = expit(xs_g[k, col])
        g["pred_logit_limit_G"] = xl_g[col]
        g["p_pred_limit_G"] = expit(g["pred_logit_limit_G"])
        g["limit_converged_G"] = conv_g[col]
        g["G"] = tp["G"]
        g["nominal_iterations"] = g["step"] / tp["mu"] * tp["prompts_per_step"] / n_epoch_prompts
        chosen = set(select_prompts(ref.index, n_select, seed, split))
        g["selected"] = g["prompt_id"].isin(chosen)
        g["beta"], g["smoothing_eps"], g["advantage"] = tp["beta"], tp["eps"], tp["advantage"]
        parts.append(g)
    cols = [
        "variant",
        "split",
        "prompt_id",
        "step",
        "checkpoint",
        "nominal_iterations",
        "p_hat",
        "ci_low",
        "ci_high",
        "successes",
        "samples",
        "p_ref",
        "successes_ref",
        "pred_logit_iter",
        "p_pred_iter",
        "pred_logit_limit",
        "p_pred_limit",
        "limit_converged",
        "selected",
        "beta",
        "smoothing_eps",
        "advantage",
        "G",
        "p_pred_iter_G",
        "pred_logit_limit_G",
        "p_pred_limit_G",
        "limit_converged_G",
    ]
    return pd.concat(parts, ignore_index=True)[cols]


def overlay_curves(run_configs: dict, variants, n_iter: int) -> pd.DataFrame:
    """Predicted p after 1 iteration, after n_iter iterations and in the limit, on a p_ref grid."""
    grid = np.linspace(0.0, 1.0, 201)
    rows = []
    for v in variants:
        tp = train_params(run_configs[v])
        xs = iterates_logit(v, grid, tp["beta"], tp["eps"], max(1, n_iter))
        xl, conv = limit_logit(v, grid, tp["beta"], tp["eps"])
        xl_g, conv_g = limit_logit(v, grid, tp["beta"], tp["eps"], tp["G"])
        rows.append(
            pd.DataFrame(
                {
                    "variant": v,
                    "p_ref": grid,
                    "p_iter_1": expit(xs[1]),
                    "n_iter": n_iter,
                    "p_iter_n": expit(xs[n_iter]),
                    "p_limit": expit(xl),
                    "limit_converged": conv,
                    "beta": tp["beta"],
                    "smoothing_eps": tp["eps"],
                    "G": tp["G"],
                    "p_limit_G": expit(xl_g),
                    "limit_converged_G": conv_g,
                }
            )
        )
    return pd.concat(rows, ignore_index=True)


def _spearman(a, b) -> tuple[float, float]:
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) < 3 or np.unique(a).size < 2 or np.unique(b).size < 2:
        return float("nan"), float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = spearmanr(a, b)
    return float(r.statistic), float(r.pvalue)


def _closer(f: pd.DataFrame, p_fin: np.ndarray) -> dict:
    """h_G's limit against the final checkpoint, beside h's: which is nearer (mean absolute gap;
    `tie` when equal, e.g. mirror's p -> 1 under both; empty without a prediction)."""
    gap = float(np.mean(np.abs(p_fin - f["p_pred_limit"].to_numpy())))
    gap_g = float(np.mean(np.abs(p_fin - f["p_pred_limit_G"].to_numpy())))
    if np.isnan(gap) or np.isnan(gap_g):
        closer = ""
    else:
        closer = "h_G" if gap_g < gap else "h" if gap < gap_g else "tie"
    return {
        "G": int(f["G"].iloc[0]),
        "mean_abs_gap_limit_G": gap_g,
        "spearman_limit_G": _spearman(f["pred_logit_limit_G"].to_numpy(), p_fin)[0],
        "limit_converged_all_G": bool(f["limit_converged_G"].all()),
        "closer": closer,
    }


def overlay_summary(traj: pd.DataFrame) -> pd.DataFrame:
    """Per (variant, split): fraction amplified (final p > p_ref) measured vs predicted, whether the
    p_ref = 0 prompts stayed at 0, Spearman correlations and mean absolute gaps."""
    rows = []
    fin = final_rows(traj)
    for (variant, split), f in fin.groupby(["variant", "split"], sort=True):
        t = traj[(traj["variant"] == variant) & (traj["split"] == split)]
        p_ref, p_fin = f["p_ref"].to_numpy(), f["p_hat"].to_numpy()
        x_lim, x_it = f["pred_logit_limit"].to_numpy(), f["pred_logit_iter"].to_numpy()
        x_ref = logit_p(p_ref)
        zero = f["successes_ref"].to_numpy() == 0
        interior = (p_ref > 0) & (p_ref < 1)
        rho_lim, p_lim = _spearman(x_lim, p_fin)
        rho_it, p_it = _spearman(x_it, p_fin)
        rho_ref, _ = _spearman(p_ref, p_fin)
        early = t[(t["checkpoint"] >= 1) & (t["checkpoint"] <= 3)]
        rows.append(
            {
                "variant": variant,
                "split": split,
                "final_step": int(f["step"].iloc[0]),
                "final_checkpoint": int(f["checkpoint"].iloc[0]),
                "nominal_iterations_final": float(f["nominal_iterations"].iloc[0]),
                "n_prompts": len(f),
                "n_interior": int(interior.sum()),
                "frac_amplified_measured": float(np.mean(p_fin > p_ref)),
                "frac_amplified_predicted": float("nan")
                if no_prediction(variant)
                else float(np.mean(x_lim > x_ref)),
                "frac_amplified_measured_interior": float(
                    np.mean(p_fin[interior] > p_ref[interior])
                )
                if interior.any()
                else float("nan"),
                "n_ref_zero": int(zero.sum()),
                "n_ref_zero_stayed_zero": int((f["successes"].to_numpy()[zero] == 0).sum()),
                "frac_ref_zero_stayed_zero": float(np.mean(f["successes"].to_numpy()[zero] == 0))
                if zero.any()
                else float("nan"),
                "predicted_ref_zero_stays_zero": True,
                "spearman_limit": rho_lim,
                "spearman_limit_pvalue": p_lim,
                "spearman_iter": rho_it,
                "spearman_iter_pvalue": p_it,
                "spearman_p_ref": rho_ref,
                "mean_abs_gap_limit": float(np.mean(np.abs(p_fin - expit(x_lim)))),
                "mean_abs_gap_iter_1to3": float(
                    np.mean(np.abs(early["p_hat"] - early["p_pred_iter"]))
                )
                if len(early)
                else float("nan"),
                "limit_converged_all": bool(f["limit_converged"].all()),
                **_closer(f, p_fin),
                "beta": float(f["beta"].iloc[0]),
                "smoothing_eps": float(f["smoothing_eps"].iloc[0]),
                "advantage": f["advantage"].iloc[0],
                "note": note(variant, f["advantage"].iloc[0]),
            }
        )
    return pd.DataFrame(rows)


#: iterations used when a grpo limit is not a unique stable fixed point
N_LIMIT = 10_000


def logit_p(p):
    """logit p for p in [0, 1], -inf and +inf at the ends."""
    with np.errstate(divide="ignore"):
        p = np.asarray(p, float)
        return np.log(p) - np.log1p(-p)


def no_prediction(variant: str) -> bool:
    """True for the two-KL variants: Thm 9's recurrence needs Delta_R, not measured (module doc)."""
    return reg.get(variant).two_kl


def iterates_logit(
    variant: str, p_ref, beta: float, eps: float, n_iter: int, group_size=None
) -> np.ndarray:
    """Predicted logits x_0..x_{n_iter} (axis 0 = n) from p_0 = p_ref (array of prompts), with
    h_G's weights at group_size G (None: h's); NaN for a variant without a prediction."""
    if no_prediction(variant):
        return np.full((n_iter + 1, *np.shape(p_ref)), np.nan)
    return dynamics.recurrence(
        variant,
        np.asarray(p_ref, float),
        beta,
        eps,
        n_iter,
        return_logits=True,
        group_size=group_size,
    )


def limit_logit(
    variant: str, p_ref, beta: float, eps: float, group_size=None
) -> tuple[np.ndarray, np.ndarray]:
    """(logit of the predicted limit, converged flag) for each p_ref; group_size G: h_G's limit
    (`limit_logit_group`), None: h's.

    pi_ref anchor, mean+std (grpo): the unique stable fixed point of h (grpo_repro.dynamics.fixed_points);
    otherwise the iterate N_LIMIT from p_ref, flagged unconverged if it still moves (e.g. a
    2-cycle). pi_ref anchor, mean-only (Dr. GRPO): the fixed point logit p_ref + 1/beta.
    pi_{n-1} anchor (mirror): p -> 1 (+inf) for interior p_ref. p_ref = 0 stays 0 and p_ref = 1
    stays 1 for every variant. Two-KL (no_prediction): NaN, not converged.
    """
    if group_size is not None:
        return limit_logit_group(variant, p_ref, beta, eps, int(group_size))
    p_ref = np.asarray(p_ref, float)
    x_ref = logit_p(p_ref)
    out = np.empty_like(p_ref)
    conv = np.ones(p_ref.shape, bool)
    v = reg.get(variant)
    if no_prediction(variant):
        out[:], conv[:] = np.nan, False
    elif v.prev_anchored:
        out[:] = np.where(p_ref > 0, np.inf, -np.inf)
    elif v.ref_anchored and v.mean_only:
        out[:] = np.where(np.isinf(x_ref), x_ref, x_ref + 1.0 / beta)
    elif v.ref_anchored:
        for u in np.unique(p_ref):
            sel = p_ref == u
            if u in (0.0, 1.0):
                out[sel] = logit_p(u)
                continue
            pts = fp.fixed_points(beta, float(u), eps)
            stable = [q for q in pts if q.stable]
            if len(pts) == 1 and stable:
                out[sel] = stable[0].logit_p_star
            else:
                xs = iterates_logit(variant, np.array([u]), beta, eps, N_LIMIT)[:, 0]
                out[sel] = xs[-1]
                conv[sel] = abs(xs[-1] - xs[-2]) <= 1e-9 * max(1.0, abs(xs[-1]))
    else:
        raise ValueError(f"no overlay recurrence for variant {variant!r}")
    return out, conv


def limit_logit_group(
    variant: str, p_ref, beta: float, eps: float, group_size: int
) -> tuple[np.ndarray, np.ndarray]:
    """limit_logit with h_G's weights at G = group_size. pi_ref anchor: the orbit of h_G from
    p_ref (dynamics.prediction.orbit_limits; Dr. GRPO reaches logit p_ref + (1 - 1/G)/beta in one
    step), converged when it reaches a fixed point; p_ref in {0, 1} stays. Other anchors: h's
    limit (mirror: p -> 1 under Omega_G > 0 too; two-KL: no prediction)."""
    if not reg.get(variant).ref_anchored:
        return limit_logit(variant, p_ref, beta, eps)
    p_ref = np.asarray(p_ref, float)
    out, conv = logit_p(p_ref), np.ones(p_ref.shape, bool)
    inner = (p_ref > 0) & (p_ref < 1)
    if inner.any():
        lim = pred.orbit_limits(
            p_ref[inner], beta, eps, n_iter=3000, group_size=group_size, variant=variant
        )
        out[inner] = logit_p(lim["last"])
        conv[inner] = lim["kind"] == "fixed_point"
    return out, conv
