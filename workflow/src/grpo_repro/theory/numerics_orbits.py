"""Completeness of the product's fixed points and 2-cycles (Prop. 1, Thm 2-3, 6; Fig 2, 4, the
bifurcation and fixed-point-map figures, fixed_point's predictions).

dynamics.fixed_points.fixed_points / two_cycles must return EVERY fixed point and 2-cycle of h,
stable or not, with the right derivative and multiplier. The reference is independent of the
product's code: the derived map in logit coordinates, H(x) = logit p_ref + (log-odds increment
of the Thm 8 PoS, mirror_dr.log_odds_increment), lambdified from sympy, scanned on a fine grid of
its own (uniform over |x| <= 40, geometric beyond, up to the a-priori bound
logit p_ref + 1/(beta sqrt eps) of Omega <= 1/sqrt eps); every sign change of H(x) - x (fixed
points) and of H(H(x)) - x away from them (2-cycles) must hold a point the product returned, and
the product's h'(p*) and multipliers h'(a) h'(b) must equal the symbolic derivative of H there.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from scipy.special import expit

from grpo_repro.dynamics import fixed_points as fxp

from . import mirror_dr as md
from .core import Context, Outcome, log_uniform, numeric_outcome, register
from .numerics_maps import mp_function

SEC = "numerics (grpo_repro.dynamics, orbits)"
X, LR, BETA, EPS = sp.symbols("x l_ref beta eps", real=True)
#: parameter sets in the region with several fixed points and 2-cycles (Prop. 1, Thm 6)
RICH = dict(beta=(1.0, 10.0), p_ref=(1e-4, 2e-2), eps=(1e-6, 1e-4))
#: the paper's "divergent" example: a stable 2-cycle around an unstable fixed point
PAPER_CYCLE = (5.0, 1e-3, 1e-5)


def _derived_H():
    """H(x) and H'(x), the derived GRPO map in logit coordinates (numpy and mpmath)."""
    q = sp.Symbol("q", positive=True)
    incr = md.log_odds_increment("grpo", q).subs({md.beta: BETA, md.eps: EPS})
    h_x = LR + incr.subs(q, 1 / (1 + sp.exp(-X)))
    args = (X, LR, BETA, EPS)
    return sp.lambdify(args, h_x, "numpy"), mp_function(sp.diff(h_x, X), args)


def scan_grid(l_ref: float, beta: float, eps: float, n: int = 40001) -> np.ndarray:
    hi = l_ref + 1.0 / (beta * np.sqrt(eps)) + 1.0
    lo = l_ref - 1.0  # Thm 3: every fixed point exceeds p_ref (2-cycles too: H > l_ref)
    inner = np.linspace(max(lo, -40.0), min(hi, 40.0), n)
    outer = [40.0 + np.geomspace(1e-3, hi - 40.0, 2000)] if hi > 40 else []
    outer += [-40.0 - np.geomspace(1e-3, -40.0 - lo, 2000)] if lo < -40 else []
    g = np.unique(np.concatenate([inner, *outer]))
    return g[(g >= lo) & (g <= hi)]


def _brackets(x: np.ndarray, f: np.ndarray) -> list[tuple[float, float]]:
    i = np.nonzero(np.sign(f[:-1]) * np.sign(f[1:]) <= 0)[0]
    return [(float(x[j]), float(x[j + 1])) for j in i]


def _params(rng, n):
    """n random (beta, p_ref, eps): half as num.maps_vs_symbolic, half in RICH; plus the paper's."""
    m = n // 2
    beta = np.concatenate([log_uniform(rng, 0.05, 20, m), log_uniform(rng, *RICH["beta"], n - m)])
    p_ref = np.concatenate([expit(rng.uniform(-8, 3, m)), log_uniform(rng, *RICH["p_ref"], n - m)])
    eps = np.concatenate([log_uniform(rng, 1e-6, 0.1, m), log_uniform(rng, *RICH["eps"], n - m)])
    return [PAPER_CYCLE] + list(zip(beta, p_ref, eps))


@register(
    "num.orbits_complete",
    "dynamics.fixed_points finds every fixed point and every 2-cycle of h (stable and unstable) "
    "that an independent fine scan of the derived map finds, with h'(p*) and the multiplier "
    "h'(a) h'(b) equal to the derivative of the derived map",
    "Prop. 1; Thm 2-3, 6",
    SEC,
)
def orbits_complete(ctx: Context) -> Outcome:
    hf, dh = _derived_H()
    sets = _params(ctx.rng, max(2, ctx.n_random // 5))
    errs, n_fp, n_unst, n_cyc, n_multi = [], 0, 0, 0, 0
    for beta, p_ref, eps in sets:
        beta, p_ref, eps = float(beta), float(p_ref), float(eps)
        lr = float(np.log(p_ref) - np.log1p(-p_ref))
        x = scan_grid(lr, beta, eps)
        with np.errstate(over="ignore"):
            hx = hf(x, lr, beta, eps)
            f1 = hx - x
            f2 = hf(hx, lr, beta, eps) - x
        fps = fxp.fixed_points(beta, p_ref, eps)
        cyc = fxp.two_cycles(beta, p_ref, eps)
        slack = 1e-9 * (1 + np.abs(x).max())
        fp_x = [f.logit_p_star for f in fps]
        scan_fp = _brackets(x, f1)
        # completeness: each bracket of the scan holds a fixed point of the product
        errs += [
            0.0 if any(lo - slack <= v <= hi + slack for v in fp_x) else 1.0 for lo, hi in scan_fp
        ]
        # 2-cycle brackets away from the fixed points
        cyc_x = [v for c in cyc for v in (c.logit_a, c.logit_b)]
        near_fp = lambda lo, hi: any(lo - 1e-6 <= v <= hi + 1e-6 for v in fp_x)  # noqa: E731
        scan_c = [(lo, hi) for lo, hi in _brackets(x, f2) if not near_fp(lo, hi)]
        errs += [
            0.0 if any(lo - slack <= v <= hi + slack for v in cyc_x) else 1.0 for lo, hi in scan_c
        ]
        for f in fps:
            d = dh(f.logit_p_star, lr, beta, eps)
            errs.append(abs(f.h_prime - d) / max(1.0, abs(d)))
            errs.append(0.0 if f.stable == (abs(d) < 1) else 1.0)
        for c in cyc:
            m = dh(c.logit_a, lr, beta, eps) * dh(c.logit_b, lr, beta, eps)
            errs.append(abs(c.multiplier - m) / max(1.0, abs(m)))
            errs.append(0.0 if c.stable == (abs(m) < 1) else 1.0)
        n_fp += len(fps)
        n_unst += sum(not f.stable for f in fps)
        n_cyc += len(cyc)
        n_multi += len(fps) > 1
    out = numeric_outcome(
        np.array(errs),
        ctx.tol,
        "missed scan roots (indicator), derivative and multiplier errors",
        len(sets),
    )
    return Outcome(
        out.passed,
        "numeric",
        out.detail + f" ({len(sets)} parameter sets: half random, half in {RICH}, and the paper's "
        f"beta=5, p_ref=1e-3, eps=1e-5); {n_fp} fixed points ({n_unst} unstable, {n_multi} sets with "
        f"several), {n_cyc} 2-cycles",
        len(sets),
    )
