"""Probability-of-success (PoS) dynamics of GRPO and its variants (Sec. 2-5, Thm 2, 5, 9; Fig 1, 4).

Implements, vectorised over numpy broadcasting:

* the advantage weights of eq. (4): w+(p) = (1-p)/sqrt(p(1-p)+eps), w-(p) = p/sqrt(p(1-p)+eps),
  Omega(p) = w+ + w- = 1/sqrt(p(1-p)+eps); eps = 0 gives sqrt((1-p)/p), sqrt(p/(1-p)) (Fig 1);
* the GRPO map of Thm 2, h_{eps,p_ref}(p) = sigma(logit p_ref + Omega(p)/beta), its derivative
  h'(p) = -h(1-h)(1-2p) / (2 beta (p(1-p)+eps)^{3/2}) (Prop. 1) and the local-stability threshold
  B(p*) = p*(1-p*)|2p*-1| / (2 (p*(1-p*)+eps)^{3/2}) (Thm 6, Lemma 1; Fig 4);
* the recurrences of every variant, all written in logit coordinates x = logit p, chosen by the
  KL anchor of the variant's record in grpo_repro.variants:
    pi_ref   (grpo, Thm 2)    x_n = logit p_ref + Omega(p_{n-1})/beta
    pi_{n-1} (mirror, Thm 5)  x_n = x_{n-1}     + Omega(p_{n-1})/beta
    two_kl   (Thm 9)  x_n = alpha logit p_ref + (1-alpha) x_{n-1} + Delta_R,n + Omega(p_{n-1})/beta
  and a mean-only record (Dr. GRPO, Sec. 5) has 1/beta in place of Omega(p_{n-1})/beta.

Finite group size (docs/theory.md Sec. 8): every map and recurrence takes `group_size` G (None: the population
weights above); with G, Omega is replaced by Omega_G of dynamics.finite_group (the group whitened by
its own mean and spread) and Dr. GRPO's 1 by (G-1)/G, giving h_G and the fixed points p*_G.

Numerics: every map is evaluated in logits (scipy.special.expit / logit); p(1-p) is computed as
expit(x) expit(-x), exact near both ends. The boundaries are exact: p_ref = 0 is absorbing
(logit = -inf stays -inf), p_ref = 1 gives 1.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, logit

from grpo_repro import variants as reg
from grpo_repro.dynamics import finite_group as fg

#: names of the registry's variants (grpo_repro.variants) at import, for callers that list them;
#: `step_logit` dispatches on the record's anchor and normalisation, read at call time
VARIANTS = reg.names()


def _check_eps(eps):
    if np.any(np.asarray(eps) < 0):
        raise ValueError("smoothing eps must be >= 0")


# ---------------------------------------------------------------------------------------------
# advantage weights (eq. 4, Fig 1)
# ---------------------------------------------------------------------------------------------
def w_plus(p, eps=0.0):
    """Credit of a success, w+(p) = (1-p)/sqrt(p(1-p)+eps); eps=0: sqrt((1-p)/p) (inf at p=0)."""
    _check_eps(eps)
    p, eps = np.broadcast_arrays(np.asarray(p, float), np.asarray(eps, float))
    with np.errstate(divide="ignore", invalid="ignore"):
        smooth = (1 - p) / np.sqrt(p * (1 - p) + eps)
        raw = np.sqrt((1 - p) / p)
    return np.where(eps > 0, smooth, raw)[()]


def w_minus(p, eps=0.0):
    """Penalty of a failure, w-(p) = p/sqrt(p(1-p)+eps); eps=0: sqrt(p/(1-p)) (inf at p=1)."""
    _check_eps(eps)
    p, eps = np.broadcast_arrays(np.asarray(p, float), np.asarray(eps, float))
    with np.errstate(divide="ignore", invalid="ignore"):
        smooth = p / np.sqrt(p * (1 - p) + eps)
        raw = np.sqrt(p / (1 - p))
    return np.where(eps > 0, smooth, raw)[()]


def omega(p, eps=0.0):
    """Omega(p) = w+(p) + w-(p) = 1/sqrt(p(1-p)+eps) (inf at p in {0,1} when eps=0)."""
    _check_eps(eps)
    p = np.asarray(p, float)
    with np.errstate(divide="ignore"):
        return 1.0 / np.sqrt(p * (1 - p) + np.asarray(eps, float))


def var_logit(x):
    """p(1-p) at p = sigma(x), computed without cancellation: sigma(x) sigma(-x)."""
    x = np.asarray(x, float)
    return expit(x) * expit(-x)


def omega_logit(x, eps):
    """Omega at p = sigma(x), accurate for p within 1e-300 of 0 or 1."""
    _check_eps(eps)
    with np.errstate(divide="ignore"):
        return 1.0 / np.sqrt(var_logit(x) + np.asarray(eps, float))


def domega_dlogit(x, eps):
    """d Omega(sigma(x)) / dx = -(1/2)(1-2p) p(1-p) / (p(1-p)+eps)^{3/2}, p = sigma(x)."""
    x = np.asarray(x, float)
    v = var_logit(x)
    one_minus_2p = expit(-x) - expit(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        return -0.5 * one_minus_2p * v / (v + np.asarray(eps, float)) ** 1.5


# ---------------------------------------------------------------------------------------------
# the GRPO map h (Thm 2), its derivative (Prop. 1) and the stability threshold B (Thm 6, Fig 4)
# ---------------------------------------------------------------------------------------------
def _safe_logit(p):
    with np.errstate(divide="ignore"):
        return logit(np.asarray(p, float))


def _shift(base, incr):
    """base + incr, keeping base = +-inf exactly (boundaries absorbing even if incr is inf)."""
    base = np.asarray(base, float)
    with np.errstate(invalid="ignore"):
        out = base + incr
    return np.where(np.isinf(base), base, out)


def increment_logit(x, beta, eps, group_size=None, v=None):
    """Omega(sigma(x))/beta of variant v's advantage (None: eq. (4); mean-only: 1/beta); at a
    finite group size G, Omega_G(sigma(x))/beta (mean-only: (1 - 1/G)/beta), dynamics.finite_group."""
    mean_only = v is not None and v.mean_only
    beta = np.asarray(beta, float)
    x = np.asarray(x, float)
    if group_size is None:
        om = np.ones_like(x) if mean_only else omega_logit(x, eps)
    elif mean_only:
        fg._check(group_size, eps)
        om = np.full_like(x, 1.0 - 1.0 / group_size)
    else:
        om = fg.omega_logit(x, group_size, eps)
    return om / beta


def h_logit(x, p_ref, beta, eps, group_size=None):
    """The GRPO map in logit coordinates: H(x) = logit p_ref + Omega(sigma(x))/beta = logit h
    (group_size G: Omega_G, the map h_G)."""
    return _shift(_safe_logit(p_ref), increment_logit(x, beta, eps, group_size))


def h(p, p_ref, beta, eps):
    """h_{eps,p_ref}(p) = sigma(logit p_ref + Omega(p)/beta) (Thm 2); h = p_ref at p_ref in {0,1}."""
    _check_eps(eps)
    z = _shift(_safe_logit(p_ref), omega(p, eps) / np.asarray(beta, float))
    return expit(z)[()]


def h_prime(p, p_ref, beta, eps):
    """h'(p) = -h(1-h)(1-2p) / (2 beta (p(1-p)+eps)^{3/2}) (Prop. 1); 0 at p_ref in {0,1}."""
    _check_eps(eps)
    p = np.asarray(p, float)
    z = _shift(_safe_logit(p_ref), omega(p, eps) / np.asarray(beta, float))
    hh = expit(z) * expit(-z)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = -hh * (1 - 2 * p) / (2 * np.asarray(beta, float) * (p * (1 - p) + eps) ** 1.5)
    return np.where(hh == 0, 0.0, out)[()]


def h_prime_logit(x, beta, eps, group_size=None):
    """dH/dx of the logit-coordinate map; equals h'(p*) at a fixed point and is conjugation
    invariant along cycles (multipliers of h and H agree). group_size G: of h_G."""
    if group_size is not None:
        return fg.domega_dlogit(x, group_size, eps) / np.asarray(beta, float)
    return domega_dlogit(x, eps) / np.asarray(beta, float)


def B(p_star, eps):
    """Stability threshold of Thm 6 / Lemma 1 (Fig 4): |h'(p*)| < 1 iff beta > B(p*),
    B(p*) = p*(1-p*)|2p*-1| / (2 (p*(1-p*)+eps)^{3/2}); B = 0 at p* in {0, 1/2, 1} (eps > 0)."""
    _check_eps(eps)
    p = np.asarray(p_star, float)
    v = p * (1 - p)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = v * np.abs(2 * p - 1) / (2 * (v + eps) ** 1.5)
    return np.where(v == 0, 0.0, out)[()]


# ---------------------------------------------------------------------------------------------
# recurrences of every variant
# ---------------------------------------------------------------------------------------------
def step_logit(variant, x_prev, p_ref, beta, eps, alpha=None, delta_r=0.0, group_size=None):
    """One step x_{n-1} -> x_n of `variant` in logit coordinates (see the module docstring);
    group_size G: the finite-group weights."""
    v = reg.get(variant)
    beta = np.asarray(beta, float)
    x_prev = np.asarray(x_prev, float)
    l_ref = _safe_logit(p_ref)
    incr = increment_logit(x_prev, beta, eps, group_size, v)
    if v.ref_anchored:
        return _shift(l_ref, incr)
    if v.prev_anchored:
        return _shift(x_prev, incr)
    if alpha is None or not np.all((np.asarray(alpha) > 0) & (np.asarray(alpha) < 1)):
        raise ValueError("two-KL variants need alpha in (0, 1)")
    alpha = np.asarray(alpha, float)
    with np.errstate(invalid="ignore"):
        base = alpha * l_ref + (1 - alpha) * x_prev
    return _shift(base, np.asarray(delta_r, float) + incr)


def recurrence(
    variant,
    p_ref,
    beta,
    eps,
    n_iter,
    p0=None,
    alpha=None,
    delta_r=0.0,
    return_logits=False,
    group_size=None,
):
    """PoS sequence p_0..p_{n_iter} of `variant` (axis 0 = n), broadcasting p_ref, beta, eps, p0.

    p0 defaults to p_ref (pi_0 = pi_ref). `delta_r` is the Renyi term Delta_R of Thm 9 for the
    two-KL variants: a scalar (the same at every step) or an array whose leading axis has exactly
    n_iter entries (Delta_R of step n = 1..n_iter); it is ignored by the other variants.
    group_size G: the finite-group weights (Omega_G; Dr. GRPO: (G-1)/G), None: the population's.
    """
    if n_iter < 0:
        raise ValueError("n_iter must be >= 0")
    _check_eps(eps)
    p0 = p_ref if p0 is None else p0
    x = _safe_logit(p0)
    shape = np.broadcast_shapes(
        np.shape(x),
        np.shape(p_ref),
        np.shape(beta),
        np.shape(eps),
        np.shape(alpha) if alpha is not None else (),
    )
    x = np.broadcast_to(x, shape).astype(float)
    dr = np.asarray(delta_r, float)
    per_step = dr.ndim >= 1
    if per_step and dr.shape[0] != n_iter:
        raise ValueError(f"delta_r: leading axis must have n_iter={n_iter} entries, got {dr.shape}")
    out = np.empty((n_iter + 1,) + shape)
    out[0] = x
    for n in range(1, n_iter + 1):
        d = dr[n - 1] if per_step else dr
        x = step_logit(variant, x, p_ref, beta, eps, alpha=alpha, delta_r=d, group_size=group_size)
        out[n] = x
    return out if return_logits else expit(out)


def iterate_h(p0, p_ref, beta, eps, n_iter):
    """p_{n+1} = h(p_n), n = 0..n_iter (Fig 5), from an arbitrary p0."""
    return recurrence(reg.find("reference", False).name, p_ref, beta, eps, n_iter, p0=p0)
