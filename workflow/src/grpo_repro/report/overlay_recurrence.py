"""The PoS recurrence each variant obeys (Sec. 3-5), iterated from every prompt's measured p_ref,
and its limit: the predictions of the report's theory overlay (grpo_repro.report.overlay).

Recurrences (logit coordinates x = logit p, grpo_repro.dynamics), chosen by the variant's record
in grpo_repro.variants (KL anchor, mean-only or not):
  pi_ref, mean+std    (grpo, Thm 2)        x_n = logit p_ref + Omega(p_{n-1})/beta,
                                           Omega(p) = 1/sqrt(p(1-p)+eps)
  pi_{n-1}, mean+std  (mirror, Thm 5)      x_n = x_{n-1} + Omega(p_{n-1})/beta   -> p_n -> 1
  pi_ref, mean-only   (Dr. GRPO, Sec. 5)   x_n = logit p_ref + 1/beta  (fixed point after one step)
  pi_{n-1}, mean-only (Mirror Dr., Sec. 5) x_n = logit p_ref + n/beta            -> p_n -> 1
beta, eps and G are the training run's own (results/train/{variant}/seed_{seed}/run.json, key
"config"). Each recurrence is predicted twice: with the population weights (h, the paper's map)
and with the finite-group weights at the run's group size G = train.num_generations (h_G,
grpo_repro.dynamics.finite_group: each group whitened by its own mean and spread; Dr. GRPO:
logit p_ref + (1 - 1/G)/beta), the map whose fixed point the fixed-point stage found closer to the
plateaus.
The two-KL variant (Thm 9), x_n = alpha logit p_ref + (1-alpha) x_{n-1} + Delta_R,n + Omega/beta,
needs the Renyi term Delta_R,n of each iteration, which checkpoint PoS do not measure: its
predictions are NaN, with a note (`no_prediction`).
"""

from __future__ import annotations

import numpy as np

from grpo_repro import variants as reg
from grpo_repro.dynamics import fixed_points as fp
from grpo_repro.dynamics import maps as dynamics
from grpo_repro.dynamics import prediction as pred

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
