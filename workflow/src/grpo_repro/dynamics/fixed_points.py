"""All fixed points and 2-cycles of the GRPO map h_{eps,p_ref} (Thm 2, Prop. 1, Thm 3, Thm 6, Fig 2, 4).

Fixed points: h(p*) = p*. Working in logit coordinates x = logit p, with the conjugate map
H(x) = logit p_ref + Omega(sigma(x))/beta, they are the roots of F(x) = H(x) - x. Because
2/sqrt(1+4 eps) <= Omega <= 1/sqrt(eps), every root lies in
    [logit p_ref + 2/(beta sqrt(1+4eps)),  logit p_ref + 1/(beta sqrt eps)]
(so every fixed point is > p_ref: Thm 3), and F is strictly decreasing wherever
p(1-p) < 2 beta eps^{3/2} (there |H'| < 1), i.e. for |x| > log(1/(2 beta eps^{3/2})). Roots are
bracketed by sign changes of F on a fine grid of the non-monotone window plus the two endpoints,
near-tangent pairs are caught by refining every local extremum of F on the grid, and each bracket
is refined with Brent's method (`all_roots`). Residual |h(p*) - p*| <= 1e-12 (checked
by the tests).

Stability (Thm 6, Lemma 1): |h'(p*)| < 1, i.e. beta > B(p*); h'(p*) = H'(x*) (conjugation).
`variant_fixed_points` gives the fixed points of the other variants' maps (Sec. 5, Thm 9).
2-cycles: roots of H(H(x)) - x that are not fixed points; the cycle {a, b = h(a)} is stable iff
its multiplier |h'(a) h'(b)| < 1 (the paper's "divergent" example beta=5, p_ref=0.001, eps=1e-5
is a stable 2-cycle around an unstable fixed point).
eps must be > 0 (with eps = 0, h is discontinuous at 0 and 1, Prop. 1).

Finite group size (`group_size` G, docs/theory.md Sec. 8): the fixed points p*_G of h_G, whose Omega_G
(dynamics.finite_group) lies in (0, Omega_G,max]: every root lies in
[logit p_ref, logit p_ref + Omega_G,max/beta], scanned on a uniform grid (Omega_G is smooth and
bounded), refined the same way; h_G'(p*_G) from the exact derivative of Omega_G.

Roots within SAME_X (relative) are merged (`all_roots`: every root of a continuous scalar function
on an interval, the search behind the fixed points and the 2-cycles).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields

import numpy as np

#: grid points across the non-monotone window of F (spacing ~ window / N)
from scipy.optimize import brentq, minimize_scalar
from scipy.special import expit

from grpo_repro import variants as reg
from grpo_repro.dynamics import finite_group as fg
from grpo_repro.dynamics import maps as dyn

DEFAULT_GRID = 4001


@dataclass(frozen=True)
class FixedPoint:
    p_star: float  # the fixed point p* = sigma(x*)
    logit_p_star: float  # x* = logit p* (finite even when p* rounds to 1.0)
    h_prime: float  # h'(p*) (= H'(x*))
    stable: bool  # |h'(p*)| < 1
    residual: float  # |h(p*) - p*|


#: the columns of fixed_point_rows and two_cycle_rows (the figures' fixed-point and 2-cycle CSVs)
FIXED_POINT_COLUMNS = ["beta", "p_ref", "eps", "p_star", "h_prime", "stable"]


@dataclass(frozen=True)
class TwoCycle:
    p_a: float  # smaller point of the cycle
    p_b: float  # larger point, h(p_a) = p_b and h(p_b) = p_a
    logit_a: float
    logit_b: float
    multiplier: float  # h'(p_a) h'(p_b)
    stable: bool  # |multiplier| < 1
    residual: float  # max(|h(p_a) - p_b|, |h(p_b) - p_a|)


TWO_CYCLE_COLUMNS = ["beta", "p_ref", "eps", *(f.name for f in fields(TwoCycle))]


# ----------------------------------------------------------------------------- scalar map (fast)
def _H_scalar(x: float, l_ref: float, beta: float, eps: float) -> float:
    e = math.exp(-abs(x))  # sigma'(x), symmetric in x, without overflow
    v = e / (1.0 + e) ** 2
    return l_ref + 1.0 / (beta * math.sqrt(v + eps))


def _H(x, l_ref, beta, eps):
    return l_ref + dyn.omega_logit(x, eps) / beta


def _bounds(l_ref: float, beta: float, eps: float) -> tuple[float, float]:
    lo = l_ref + 2.0 / (beta * math.sqrt(1.0 + 4.0 * eps))
    hi = l_ref + 1.0 / (beta * math.sqrt(eps))
    # widen by a margin so that F(lo) > 0 > F(hi) strictly despite rounding (|F'| ~ 1 there)
    return lo - 1e-6 * (1 + abs(lo)), hi + 1e-6 * (1 + abs(hi))


def _window(beta: float, eps: float) -> float:
    """|x| beyond which |H'(x)| < 1 (0 when H is a contraction everywhere)."""
    q_min = 2.0 * beta * eps**1.5
    return 0.0 if q_min >= 0.25 else math.log(1.0 / q_min) + 1.0


def _grid(lo: float, hi: float, beta: float, eps: float, n: int, outer: int = 0) -> np.ndarray:
    w = _window(beta, eps)
    pts = [np.array([lo, hi])]
    a, b = max(lo, -w), min(hi, w)
    if b > a:
        pts.append(np.linspace(a, b, n))
    if outer:  # geometric spacing outside the window (for maps that compose H)
        if hi > w + 1:
            pts.append(w + np.geomspace(1.0, hi - w, outer))
        if lo < -w - 1:
            pts.append(-w - np.geomspace(1.0, -w - lo, outer))
    g = np.unique(np.concatenate(pts))
    return g[(g >= lo) & (g <= hi)]


def _boundary(p_ref: float) -> list[FixedPoint] | None:
    if p_ref <= 0.0:
        return [FixedPoint(0.0, -math.inf, 0.0, True, 0.0)]
    if p_ref >= 1.0:
        return [FixedPoint(1.0, math.inf, 0.0, True, 0.0)]
    return None


def _validate(beta, eps):
    if not beta > 0:
        raise ValueError("beta must be > 0")
    if not eps > 0:
        raise ValueError("fixed points need smoothing eps > 0 (h is discontinuous at eps = 0)")


def fixed_points(
    beta: float, p_ref: float, eps: float, n_grid: int = DEFAULT_GRID, group_size: int | None = None
) -> list[FixedPoint]:
    """Every fixed point of h_{eps,p_ref} (sorted), with h'(p*) and stability |h'(p*)| < 1;
    group_size G: of h_G (p*_G)."""
    beta, p_ref, eps = float(beta), float(p_ref), float(eps)
    _validate(beta, eps)
    bd = _boundary(p_ref)
    if bd is not None:
        return bd
    l_ref = math.log(p_ref) - math.log1p(-p_ref)
    if group_size is not None:
        return _fixed_points_group(beta, l_ref, eps, n_grid, int(group_size))
    return _fixed_points_logit(beta, l_ref, eps, n_grid)


def _fixed_points_group(beta: float, l_ref: float, eps: float, n_grid: int, g: int):
    """The fixed points of H_G(x) = l_ref + Omega_G(sigma(x))/beta."""
    hi = l_ref + fg.omega_max(g, eps) / beta
    grid = np.linspace(l_ref - 1e-6 * (1 + abs(l_ref)), hi + 1e-6 * (1 + abs(hi)), n_grid)

    def f(x):  # H_G(x) - x, with l_ref exactly (no round trip through p_ref)
        return l_ref + fg.omega_logit(x, g, eps) / beta - x

    out = []
    for x in all_roots(f, lambda t: float(f(t)), grid):
        hp = float(dyn.h_prime_logit(x, beta, eps, group_size=g))
        res = abs(float(expit(x + f(x))) - float(expit(x)))
        out.append(FixedPoint(float(expit(x)), float(x), hp, abs(hp) < 1.0, res))
    return out


def _fixed_points_logit(beta: float, l_ref: float, eps: float, n_grid: int) -> list[FixedPoint]:
    """The fixed points of H(x) = l_ref + Omega(sigma(x))/beta (l_ref finite, in logits: no
    round trip through p_ref)."""
    lo, hi = _bounds(l_ref, beta, eps)
    grid = _grid(lo, hi, beta, eps, n_grid)
    roots = all_roots(
        lambda x: _H(x, l_ref, beta, eps) - x, lambda x: _H_scalar(x, l_ref, beta, eps) - x, grid
    )
    out = []
    for x in roots:
        p = float(expit(x))
        hp = float(dyn.h_prime_logit(x, beta, eps))
        res = abs(float(expit(_H_scalar(x, l_ref, beta, eps))) - p)
        out.append(FixedPoint(p, float(x), hp, abs(hp) < 1.0, res))
    return out


def variant_fixed_points(
    variant: str,
    beta: float,
    p_ref: float,
    eps: float,
    alpha: float | None = None,
    delta_r: float = 0.0,
    n_grid: int = DEFAULT_GRID,
) -> list[FixedPoint]:
    """Fixed points of the PoS map of `variant` by its record (grpo_repro.variants; Delta_R held
    constant for two-KL): pi_ref anchor: those of h, mean-only sigma(logit p_ref + 1/beta) reached
    in one step (derivative 0); two-KL mean-only: logit p* = logit p_ref + Delta_R/alpha +
    1/(alpha beta), derivative 1-alpha; two-KL: logit p* = logit p_ref + Delta_R/alpha +
    Omega(p*)/(alpha beta), the fixed points of h with (alpha beta, sigma(logit p_ref +
    Delta_R/alpha)), derivative (1-alpha) + alpha h'. pi_{n-1} (mirror): none (p_n -> 1, Thm 5)."""
    beta, p_ref = float(beta), float(p_ref)
    v = reg.get(variant)  # dispatch on the record's anchor and normalisation
    if v.ref_anchored and not v.mean_only:
        return fixed_points(beta, p_ref, eps, n_grid)
    if v.prev_anchored:
        raise ValueError(
            f"{variant}: no interior fixed point (logit p_n increases by >= 1/beta per step)"
        )
    bd = _boundary(p_ref)
    if bd is not None:
        return bd
    l_ref = math.log(p_ref) - math.log1p(-p_ref)
    if v.ref_anchored:  # mean-only
        x = l_ref + 1.0 / beta
        return [FixedPoint(float(expit(x)), x, 0.0, True, 0.0)]
    if alpha is None or not 0 < alpha < 1:
        raise ValueError("two-KL variants need alpha in (0, 1)")
    shifted = l_ref + delta_r / alpha
    if v.mean_only:
        x = shifted + 1.0 / (alpha * beta)
        return [FixedPoint(float(expit(x)), x, 1.0 - alpha, True, 0.0)]
    out = []
    _validate(alpha * beta, eps)
    for fp in _fixed_points_logit(alpha * beta, shifted, eps, n_grid):
        d = (1.0 - alpha) + alpha * fp.h_prime
        out.append(FixedPoint(fp.p_star, fp.logit_p_star, d, abs(d) < 1.0, fp.residual))
    return out


def two_cycles(beta: float, p_ref: float, eps: float, n_grid: int = DEFAULT_GRID) -> list[TwoCycle]:
    """Every 2-cycle {a, b} of h (h(a) = b, h(b) = a, a != b), with its multiplier h'(a) h'(b)."""
    beta, p_ref, eps = float(beta), float(p_ref), float(eps)
    _validate(beta, eps)
    if _boundary(p_ref) is not None:
        return []
    l_ref = math.log(p_ref) - math.log1p(-p_ref)
    lo, hi = _bounds(l_ref, beta, eps)
    grid = _grid(lo, hi, beta, eps, n_grid, outer=200)

    def g_vec(x):
        return _H(_H(x, l_ref, beta, eps), l_ref, beta, eps) - x

    def g_scalar(x):
        return _H_scalar(_H_scalar(x, l_ref, beta, eps), l_ref, beta, eps) - x

    cycles = []
    for x in all_roots(g_vec, g_scalar, grid):
        y = _H_scalar(x, l_ref, beta, eps)
        if abs(y - x) <= 1e-7 * (1 + abs(x)):
            continue  # a fixed point of h
        a, b = (x, y) if x < y else (y, x)
        if any(abs(a - c.logit_a) <= 1e-7 * (1 + abs(a)) for c in cycles):
            continue
        mult = float(dyn.h_prime_logit(a, beta, eps) * dyn.h_prime_logit(b, beta, eps))
        pa, pb = float(expit(a)), float(expit(b))
        res = max(
            abs(float(expit(_H_scalar(a, l_ref, beta, eps))) - pb),
            abs(float(expit(_H_scalar(b, l_ref, beta, eps))) - pa),
        )
        cycles.append(TwoCycle(pa, pb, float(a), float(b), mult, abs(mult) < 1.0, res))
    return cycles


def fixed_point_rows(
    beta: float, p_ref: float, eps: float, n_grid: int = DEFAULT_GRID
) -> list[dict]:
    """Rows FIXED_POINT_COLUMNS (one per fixed point)."""
    return [
        dict(
            beta=beta, p_ref=p_ref, eps=eps, p_star=fp.p_star, h_prime=fp.h_prime, stable=fp.stable
        )
        for fp in fixed_points(beta, p_ref, eps, n_grid)
    ]


def two_cycle_rows(beta: float, p_ref: float, eps: float, n_grid: int = DEFAULT_GRID) -> list[dict]:
    """Rows TWO_CYCLE_COLUMNS (one per 2-cycle)."""
    return [
        dict(beta=beta, p_ref=p_ref, eps=eps, **asdict(c))
        for c in two_cycles(beta, p_ref, eps, n_grid)
    ]


#: two logits closer than this (relative) are the same point
SAME_X = 1e-9


def all_roots(f_vec, f_scalar, grid: np.ndarray) -> list[float]:
    """Every root of f on [grid[0], grid[-1]] bracketed by the grid (plus near-tangent pairs)."""
    xs = np.asarray(grid, float)
    fs = f_vec(xs)
    # refine interior local extrema whose value does not change sign with its neighbours:
    # a positive local min / negative local max may still cross 0 between grid points
    d = np.diff(fs)
    ext = (
        np.where(
            (np.sign(d[:-1]) * np.sign(d[1:]) < 0)
            & (fs[:-2] * fs[1:-1] > 0)
            & (fs[1:-1] * fs[2:] > 0)
        )[0]
        + 1
    )
    extra_x, extra_f = [], []
    for i in ext:
        sgn = 1.0 if fs[i] > 0 else -1.0
        res = minimize_scalar(
            lambda t: sgn * f_scalar(t),
            bounds=(xs[i - 1], xs[i + 1]),
            method="bounded",
            options={"xatol": 1e-13},
        )
        if sgn * res.fun < 0:
            extra_x.append(res.x)
            extra_f.append(f_scalar(res.x))
    if extra_x:
        xs = np.concatenate([xs, extra_x])
        fs = np.concatenate([fs, extra_f])
        order = np.argsort(xs, kind="stable")
        xs, fs = xs[order], fs[order]
    roots = list(xs[fs == 0.0])
    for i in np.where(fs[:-1] * fs[1:] < 0)[0]:
        roots.append(
            brentq(
                f_scalar, xs[i], xs[i + 1], xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500
            )
        )
    roots.sort()
    out = []
    for r in roots:
        if not out or abs(r - out[-1]) > SAME_X * (1 + abs(r)):
            out.append(float(r))
    return out
