"""Fixed-point predictions for the experiment (Thm 1-3, 6; Sec. 3): where the GRPO PoS map
h_{eps,p_ref}(p) = sigma(logit p_ref + Omega(p)/beta) takes p_ref, and what that limit costs in KL.

- `orbit_limits` / `limit_from`: iterate h (in logits, dynamics.maps) from p_0 (default p_ref,
  pi_0 = pi_ref) and classify the orbit: "fixed_point" (|x_N - x_{N-1}| <= tol (1 + |x_N|): a
  stable fixed point reached), "two_cycle" (x_N = x_{N-2} to tol, x_N != x_{N-1}) or
  "not_converged" (anything else: chaos, longer cycles, too slow). Vectorised over inputs.
- `limits_from_ref(p_ref, ...)`: the last iterate from each measured p_ref (clipped to
  [1e-9, 1 - 1e-9]; p_ref in {0, 1} kept: absorbing), the map iterated once per distinct value.
- `gibbs_kl(p_star, p_ref)`: KL(pi || pi_ref) of the Gibbs policy pi = pi_ref exp(A/beta)/Z whose
  PoS is p*: the tilt is constant on the success and failure sets, so it is the Bernoulli KL
  p* log(p*/p_ref) + (1-p*) log((1-p*)/(1-p_ref)) (theory check pred.gibbs_kl_bernoulli).
- `beta_eff(p, p_ref, eps)`: the beta making p a fixed point, from logit p = logit p_ref +
  Omega(p)/beta: beta = Omega(p) / (logit p - logit p_ref); nan where p <= p_ref (Thm 3: every
  fixed point exceeds p_ref).
- `p_star_interval(p_ref_lo, p_ref_hi, beta, eps)`: the limit reached from p_ref for p_ref across
  [lo, hi]. Along a branch of stable fixed points p* is increasing in p_ref (implicit function:
  d logit p* / d logit p_ref = 1/(1 - H'(x*)) > 0 when |H'(x*)| < 1; theory check
  pred.p_star_monotone), so the interval is [p*(lo), p*(hi)] when every sampled p_ref reaches a
  fixed point and the sampled p* increase (`monotone`); otherwise the hull of every sampled limit
  point, flagged.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, logit, xlogy

from grpo_repro import variants as reg
from grpo_repro.dynamics import finite_group as fg
from grpo_repro.dynamics import maps as dyn

KINDS = ("fixed_point", "two_cycle", "not_converged")


def orbit_limits(
    p_ref,
    beta,
    eps,
    n_iter: int = 3000,
    tol: float = 1e-10,
    p0=None,
    group_size=None,
    variant: str = "grpo",
) -> dict:
    """Classify the orbit of h from p0 (default p_ref), broadcasting the inputs (variant: a
    pi_ref-anchored one, grpo or dr_grpo). Returns arrays: kind (str), a, b (fixed point:
    a = b = p*; two_cycle: a < b; not_converged: a = b = p_N)."""
    if not reg.get(variant).ref_anchored:
        raise ValueError(f"{variant}: no fixed point from p_ref (its KL anchor is not pi_ref)")
    x = dyn.recurrence(
        variant, p_ref, beta, eps, n_iter, p0=p0, return_logits=True, group_size=group_size
    )[-3:]
    x2, x1, x0 = x[0], x[1], x[2]  # x_{N-2}, x_{N-1}, x_N
    scale = 1 + np.abs(x0)
    with np.errstate(invalid="ignore"):
        fixed = (np.abs(x0 - x1) <= tol * scale) | (x0 == x1)
        cycle = ~fixed & ((np.abs(x0 - x2) <= tol * scale) | (x0 == x2))
    kind = np.where(fixed, KINDS[0], np.where(cycle, KINDS[1], KINDS[2]))
    p0_, p1_ = expit(x0), expit(x1)
    a = np.where(cycle, np.minimum(p0_, p1_), p0_)
    b = np.where(cycle, np.maximum(p0_, p1_), p0_)
    return dict(kind=kind, a=a, b=b, last=p0_)


def limits_from_ref(p_ref, beta, eps, group_size=None, variant: str = "grpo", n_iter: int = 400):
    """p*_G (group_size G; None: p* of h) reached from each measured p_ref, e.g. a count over its
    sample size: `orbit_limits`'s last iterate after n_iter steps from p_ref clipped to
    [1e-9, 1 - 1e-9], p_ref itself where it is 0 or 1 (absorbing). The map is iterated once per
    distinct value (elementwise: the same numbers as on the whole array)."""
    p_ref = np.asarray(p_ref, float)
    values, where = np.unique(p_ref, return_inverse=True)
    lim = orbit_limits(
        np.clip(values, 1e-9, 1 - 1e-9),
        beta,
        eps,
        n_iter=n_iter,
        group_size=group_size,
        variant=variant,
    )["last"][where.reshape(p_ref.shape)]
    return np.where((p_ref > 0) & (p_ref < 1), lim, p_ref)


def limit_from(
    p_ref,
    beta,
    eps,
    n_iter: int = 3000,
    tol: float = 1e-10,
    p0=None,
    group_size=None,
    variant: str = "grpo",
):
    """("fixed_point", p*), ("two_cycle", (a, b)) or ("not_converged", p_N) for scalar inputs;
    for array inputs an object array of such tuples with the broadcast shape."""
    out = orbit_limits(p_ref, beta, eps, n_iter, tol, p0, group_size, variant)

    def one(k, a, b):
        if k == "fixed_point":
            return ("fixed_point", float(a))
        if k == "two_cycle":
            return ("two_cycle", (float(a), float(b)))
        return ("not_converged", float(a))

    if np.ndim(out["kind"]) == 0:
        return one(str(out["kind"]), out["a"], out["b"])
    res = np.empty(np.shape(out["kind"]), dtype=object)
    for idx in np.ndindex(res.shape):
        res[idx] = one(str(out["kind"][idx]), out["a"][idx], out["b"][idx])
    return res


def gibbs_kl(p_star, p_ref):
    """KL(pi || pi_ref) of the Gibbs policy with PoS p* (Bernoulli KL; 0 log 0 = 0)."""
    p, q = np.asarray(p_star, float), np.asarray(p_ref, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = xlogy(p, p) - xlogy(p, q) + xlogy(1 - p, 1 - p) - xlogy(1 - p, 1 - q)
    return out[()]


def beta_eff(p, p_ref, eps, group_size=None):
    """beta for which p is a fixed point of h_{eps,p_ref}: Omega(p)/(logit p - logit p_ref);
    nan where p <= p_ref (no positive beta) or p not in (0, 1)."""
    p, p_ref = np.asarray(p, float), np.asarray(p_ref, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = logit(p) - logit(p_ref)
        om = dyn.omega(p, eps) if group_size is None else fg.omega(p, group_size, eps)
        out = om / gap
    ok = (p > p_ref) & (p > 0) & (p < 1) & np.isfinite(out) & (out > 0)
    return np.where(ok, out, np.nan)[()]


def p_star_intervals(
    p_ref_lo,
    p_ref_hi,
    beta,
    eps,
    n_samples: int = 33,
    n_iter: int = 3000,
    group_size=None,
    variant: str = "grpo",
) -> dict:
    """`p_star_interval` for arrays of interval ends (one orbit computation for all): arrays lo,
    hi, monotone."""
    lo_in, hi_in = (
        np.atleast_1d(np.asarray(p_ref_lo, float)),
        np.atleast_1d(np.asarray(p_ref_hi, float)),
    )
    if not np.all((lo_in > 0) & (lo_in <= hi_in) & (hi_in < 1)):
        raise ValueError("need 0 < p_ref_lo <= p_ref_hi < 1")
    t = np.linspace(0.0, 1.0, n_samples)
    refs = expit(logit(lo_in)[:, None] + t * (logit(hi_in) - logit(lo_in))[:, None])
    out = orbit_limits(refs, beta, eps, n_iter, group_size=group_size, variant=variant)
    fixed = np.all(out["kind"] == "fixed_point", axis=1)
    monotone = fixed & np.all(np.diff(out["a"], axis=1) >= -1e-12, axis=1)
    pts = np.concatenate([out["a"], out["b"]], axis=1)
    lo = np.where(monotone, out["a"][:, 0], pts.min(axis=1))
    hi = np.where(monotone, out["a"][:, -1], pts.max(axis=1))
    return dict(lo=lo, hi=hi, monotone=monotone, kinds=out["kind"])


def p_star_interval(
    p_ref_lo,
    p_ref_hi,
    beta,
    eps,
    n_samples: int = 33,
    n_iter: int = 3000,
    group_size=None,
    variant: str = "grpo",
):
    """Limit of the GRPO orbit from p_ref for p_ref in [lo, hi] (samples evenly spaced in logit).

    Returns dict(lo, hi, monotone, kinds): lo/hi = p*(p_ref_lo), p*(p_ref_hi) when every sample
    reaches a fixed point and p* increases with p_ref along them (one stable branch: the
    propagated interval); otherwise the min / max of every sampled limit point (cycle points
    included) with monotone = False."""
    out = p_star_intervals(
        p_ref_lo, p_ref_hi, beta, eps, n_samples, n_iter, group_size=group_size, variant=variant
    )
    return dict(
        lo=float(out["lo"][0]),
        hi=float(out["hi"][0]),
        monotone=bool(out["monotone"][0]),
        kinds=sorted(set(out["kinds"][0].tolist())),
    )
