"""Advantage weights at a finite group size G (docs/theory.md Sec. 8: GRPO whitens each group with its OWN mean
and spread; the paper's eq. (4) uses the population p).

A group of G samples with k successes, p_hat = k/G, gives a success the paper's smoothed whitened
advantage (1 - p_hat) / s(k) and a failure -p_hat / s(k), s(k) = sqrt(p_hat (1 - p_hat) + eps)
(mean-only / Dr. GRPO: s = 1); a group whose samples all succeed or all fail gives 0. Conditioning
on the sample's own reward and averaging over the other G - 1 samples, J ~ Binomial(G - 1, p):

    w+_G(p) = E[(1 - (J+1)/G) / s(J+1)],   w-_G(p) = E[(J/G) / s(J)],   Omega_G = w+_G + w-_G.

The argument of Sec. 2-3 (a free per-prompt policy, the KL of docs/theory.md Sec. 7) with these weights
puts the stationary points of the expected update at the fixed points of

    h_G(p) = sigma(logit p_ref + Omega_G(p) / beta)          (dynamics.maps, group_size=G).

Closed forms the theory stage checks: mean-only weights are exactly (G-1)/G times the population
ones ((1-p), p), so Dr. GRPO's finite-G law is logit p*_G = logit p_ref + (1 - 1/G)/beta; Omega_G ->
Omega as G grows; Omega_G(0) = w+ of a lone success, Omega_G(1) = w- of a lone failure (finite,
where Omega = 1/sqrt(eps)). Everything is computed in logits x = logit p (Binomial weights from
log-sigmoids), exact near both ends.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.special import expit, gammaln, log_expit

from grpo_repro.variants import Variant


def _check(group_size: int, eps) -> None:
    if int(group_size) != group_size or group_size < 2:
        raise ValueError(f"group size G must be an integer >= 2, got {group_size!r}")
    if np.any(np.asarray(eps) < 0):
        raise ValueError("smoothing eps must be >= 0")


@lru_cache(maxsize=64)
def _log_binom(n: int) -> np.ndarray:
    j = np.arange(n + 1)
    out = gammaln(n + 1) - gammaln(j + 1) - gammaln(n - j + 1)
    out.setflags(write=False)  # cached: shared by every call
    return out


def _log_pmf(x, n: int) -> np.ndarray:
    """log P(J = j), J ~ Binomial(n, sigma(x)), j = 0..n on a new last axis."""
    j = np.arange(n + 1)
    x = np.asarray(x, float)[..., None]
    lp, lq = log_expit(x), log_expit(-x)
    if np.isfinite(x).all():
        return _log_binom(n) + j * lp + (n - j) * lq
    with np.errstate(invalid="ignore"):  # 0 * -inf at x = +-inf
        out = _log_binom(n) + np.where(j > 0, j * lp, 0.0)
        return out + np.where(j < n, (n - j) * lq, 0.0)


def group_advantages(k, group_size: int, eps, v: Variant | None = None):
    """(a_plus, a_minus): the advantage of a success and minus that of a failure in a group with k
    successes of G (0 when k = 0 or G for the side that has no member; whitened by the group's own
    spread, eq. (4), unless variant v's advantage is mean-only, Dr. GRPO; v None: eq. (4))."""
    _check(group_size, eps)
    k = np.asarray(k, float)
    q = k / group_size
    s = 1.0 if v is not None and v.mean_only else np.sqrt(q * (1 - q) + np.asarray(eps, float))
    with np.errstate(divide="ignore", invalid="ignore"):
        a_plus = np.where(k > 0, (1 - q) / s, 0.0)
        a_minus = np.where(k < group_size, q / s, 0.0)
    return a_plus, a_minus


def _coefficients(group_size: int, eps, v: Variant | None):
    """c+_j, c-_j: the advantage of a success with j other successes, minus that of a failure."""
    j = np.arange(group_size)
    a_plus, _ = group_advantages(j + 1, group_size, eps, v)
    _, a_minus = group_advantages(j, group_size, eps, v)
    return a_plus, a_minus


def _per_j(group_size: int, eps, v: Variant | None):
    """Coefficients c+_j, c-_j (j = 0..G-1 other successes) of w+_G and w-_G (eps: a scalar, or
    an array broadcast against the other sample's successes on a new last axis)."""
    if np.ndim(eps) == 0:
        return _per_j_scalar(int(group_size), float(eps), v)
    return _coefficients(group_size, np.asarray(eps, float)[..., None], v)


@lru_cache(maxsize=256)
def _per_j_scalar(group_size: int, eps: float, v: Variant | None):
    out = _coefficients(group_size, eps, v)
    for a in out:
        a.setflags(write=False)  # cached: shared by every call
    return out


def weights_logit(x, group_size: int, eps, v: Variant | None = None):
    """(w+_G, w-_G) at p = sigma(x) (see the module doc)."""
    _check(group_size, eps)
    pmf = np.exp(_log_pmf(x, group_size - 1))
    c_plus, c_minus = _per_j(group_size, eps, v)
    return (pmf * c_plus).sum(-1)[()], (pmf * c_minus).sum(-1)[()]


def weights(p, group_size: int, eps, v: Variant | None = None):
    """(w+_G(p), w-_G(p))."""
    with np.errstate(divide="ignore"):
        x = np.log(np.asarray(p, float)) - np.log1p(-np.asarray(p, float))
    return weights_logit(x, group_size, eps, v)


def omega_logit(x, group_size: int, eps, v: Variant | None = None):
    """Omega_G at p = sigma(x)."""
    w_p, w_m = weights_logit(x, group_size, eps, v)
    return w_p + w_m


def omega(p, group_size: int, eps, v: Variant | None = None):
    """Omega_G(p) = w+_G(p) + w-_G(p)."""
    w_p, w_m = weights(p, group_size, eps, v)
    return w_p + w_m


def domega_dlogit(x, group_size: int, eps, v: Variant | None = None):
    """d Omega_G(sigma(x)) / dx, exact: d/dx P(J = j) = P(J = j) (j - (G - 1) p)."""
    _check(group_size, eps)
    n = group_size - 1
    pmf = np.exp(_log_pmf(x, n))
    c_plus, c_minus = _per_j(group_size, eps, v)
    score = np.arange(n + 1) - n * expit(np.asarray(x, float))[..., None]
    return (pmf * score * (c_plus + c_minus)).sum(-1)[()]


def omega_max(group_size: int, eps, v: Variant | None = None) -> float:
    """An upper bound of Omega_G over p: the largest success weight plus the largest failure one."""
    c_plus, c_minus = _per_j(group_size, float(eps), v)
    return float(np.max(c_plus) + np.max(c_minus))
