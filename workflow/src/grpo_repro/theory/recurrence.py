"""Sec. 3 / App. C: the GRPO success-probability map h, its shape, amplification and stability.

h(p) = sigma(logit p_ref + 1/(beta sqrt(p(1-p)+eps))) (Thm 2), written as the paper writes it
(`h_of_r`) and tied to its derivation: rec.h_from_gibbs proves h_of_r = gibbs.h_derived (the PoS
of the Thm 1 Gibbs policy), so h', B and every check below inherit that derivation; the numeric
library grpo_repro.dynamics.maps is compared with these formulas in numerics_maps.py. Checks: Prop. 1 (continuity for
eps > 0; the eps = 0 blow-up at the ends; h'(p) = -h(1-h)(1-2p)/(2 beta (p(1-p)+eps)^{3/2});
h decreasing on (0,1/2), increasing on (1/2,1)); Thm 3 (h(p) > p_ref for 0 < p_ref < 1, so every
fixed point exceeds p_ref; the library's fixed points, dynamics.fixed_points); boundaries
(p_ref = 0 -> h = 0, p_ref = 1 -> h = 1; eps > 0 -> h(1) < 1); Thm 6 / Lemma 1 (at a fixed point
|h'(p*)| = B(p*)/beta, so |h'(p*)| < 1 iff beta > B(p*), B(p) = p(1-p)|2p-1| / (2 (p(1-p)+eps)^{3/2})).
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from scipy.special import expit

from grpo_repro.dynamics import fixed_points as fxp

from . import gibbs as gb
from .core import (
    Context,
    Outcome,
    equal,
    log_uniform,
    numeric_outcome,
    positive,
    positive_on_unit_interval,
    register,
    total_derivative,
    unit,
)

SEC = "Sec. 3 / App. C"
p = sp.Symbol("p", positive=True)
eps = sp.Symbol("eps", positive=True)
beta = sp.Symbol("beta", positive=True)
r = sp.Symbol("r", positive=True)  # r = sqrt(p(1-p)+eps), dr/dp = (1-2p)/(2r)
k = sp.Symbol("k", positive=True)  # k = (1-p_ref)/p_ref, p_ref in (0,1)
DR = (1 - 2 * p) / (2 * r)


def h_of_r(kk=k, b=beta, rr=r):
    """h = 1/(1 + ((1-p_ref)/p_ref) exp(-1/(beta r))), r = sqrt(p(1-p)+eps)."""
    return 1 / (1 + kk * sp.exp(-1 / (b * rr)))


def h_prime_paper(hh, pp=p, b=beta, rr=r):
    """Prop. 1: h'(p) = -h(1-h)(1-2p) / (2 beta (p(1-p)+eps)^{3/2})."""
    return -hh * (1 - hh) * (1 - 2 * pp) / (2 * b * rr**3)


def B_paper(pp, e):
    """Thm 6 / Lemma 1: B(p) = p(1-p)|2p-1| / (2 (p(1-p)+eps)^{3/2})."""
    return pp * (1 - pp) * sp.Abs(2 * pp - 1) / (2 * (pp * (1 - pp) + e) ** sp.Rational(3, 2))


@register(
    "rec.h_from_gibbs",
    "The paper's h = 1/(1 + ((1-p_ref)/p_ref) exp(-1/(beta sqrt(p(1-p)+eps)))) is the PoS of "
    "the Thm 1 Gibbs policy: h = gibbs_pos(p_ref, w+(p), w-(p)) (gibbs.h_derived)",
    "Thm 1 -> Thm 2",
    SEC,
)
def h_from_gibbs(ctx: Context) -> Outcome:
    pr = sp.Symbol("p_ref", positive=True)
    s = sp.sqrt(p * (1 - p) + eps)
    paper = h_of_r(kk=(1 - pr) / pr, rr=s)
    derived = gb.h_derived(p, pr, beta, eps)
    # compare odds: both are X/(X + c) forms; odds ratio must be exactly 1
    odds = sp.powsimp(sp.cancel(sp.together(paper / (1 - paper) / (derived / (1 - derived)))))
    ok = equal(odds, 1) or equal(paper, derived)
    return Outcome(
        ok,
        "symbolic",
        "odds of h_of_r over odds of h_derived (Thm 8 PoS with anchor pi_ref and the eq. (4) "
        f"weights at p) reduce to {sp.simplify(odds) if not ok else 1}",
    )


@register(
    "rec.h_prime", "h'(p) = -h(1-h)(1-2p) / (2 beta (p(1-p)+eps)^{3/2})", "Prop. 1 (App. C)", SEC
)
def h_prime(ctx: Context, formula=None) -> Outcome:
    formula = h_prime_paper if formula is None else formula
    h = h_of_r()
    d = total_derivative(h, p, {r: DR})
    ok = equal(d, formula(h))
    return Outcome(
        ok,
        "symbolic",
        "chain rule through r = sqrt(p(1-p)+eps) (dr/dp = (1-2p)/(2r)); "
        + ("difference with the stated h' cancels to 0" if ok else "difference does not vanish"),
    )


@register(
    "rec.h_shape",
    "h is strictly decreasing on (0,1/2) and strictly increasing on (1/2,1)",
    "Prop. 1 (App. C)",
    SEC,
)
def h_shape(ctx: Context) -> Outcome:
    h = h_of_r()
    d = total_derivative(h, p, {r: DR})
    factor = sp.cancel(sp.together(d / (2 * p - 1)))
    ok = positive(factor) and equal(factor, h * (1 - h) / (2 * beta * r**3))
    return Outcome(
        ok,
        "symbolic",
        "h'(p) = (2p-1) F with F = h(1-h)/(2 beta r^3), proven > 0 from k = "
        "(1-p_ref)/p_ref > 0, beta > 0, r > 0: sign(h') = sign(2p-1)",
    )


@register(
    "rec.continuity",
    "For eps > 0, h is continuous on [0,1] (p(1-p)+eps >= eps > 0), so a fixed point exists "
    "(Brouwer); eps = 0: see the erratum err.prop1_eps_zero",
    "Prop. 1 (App. C)",
    SEC,
    related=("err.prop1_eps_zero",),
)
def continuity(ctx: Context) -> Outcome:
    s = p * (1 - p) + eps
    ok_in = positive_on_unit_interval(s - eps, p) and s.subs(p, 0) == eps and s.subs(p, 1) == eps
    h = gb.h_derived(p, sp.Symbol("p_ref", positive=True), beta, eps)
    at_ends = [h.subs(p, v) for v in (0, 1)]
    ok = ok_in and all(v.is_finite is not False and not v.has(sp.zoo, sp.nan) for v in at_ends)
    return Outcome(
        ok,
        "symbolic",
        "p(1-p) > 0 on (0,1) and = 0 at 0, 1, so p(1-p)+eps >= eps > 0 and the derived h "
        "(gibbs.h_derived: Thm 8 PoS with the eq. (4) weights) is a composition of continuous "
        f"maps on [0,1]; h(0) = {sp.simplify(at_ends[0])}",
    )


@register(
    "rec.amplification",
    "Amplification: h(p) > p_ref for all p in [0,1] when 0 < p_ref < 1, so every "
    "fixed point p* = h(p*) satisfies p* > p_ref",
    "Thm 3 (App. C)",
    SEC,
)
def amplification(ctx: Context) -> Outcome:
    pr = unit("u")  # p_ref in (0,1)
    d = sp.Symbol("d", positive=True)  # exp(-Omega/beta) = 1/(1+d) in (0,1) as Omega/beta > 0
    h = h_of_r(kk=(1 - pr) / pr).subs(sp.exp(-1 / (beta * r)), 1 / (1 + d))
    omega_pos = (1 / r).is_positive and (1 / (beta * r)).is_positive
    ok = omega_pos and positive(h - pr)
    return Outcome(
        ok,
        "symbolic",
        f"h - p_ref = {sp.factor(sp.cancel(h - pr))} > 0 with p_ref = u/(1+u), "
        "exp(-Omega/beta) = 1/(1+d) (u, d > 0; Omega/beta = 1/(beta r) > 0 so exp(-Omega/beta) < 1)",
    )


@register(
    "rec.amplification_numeric",
    "Every fixed point of h located numerically exceeds p_ref, and at least one exists (eps > 0)",
    "Thm 3; Prop. 1",
    SEC,
)
def amplification_numeric(ctx: Context) -> Outcome:
    n, rng = ctx.n_random, ctx.rng
    lr = rng.uniform(-9, 9, n)
    b = log_uniform(rng, 1e-2, 10, n)
    e = log_uniform(rng, 1e-6, 1, n)
    pref = expit(lr)
    found = [[f.p_star for f in fxp.fixed_points(*row)] for row in zip(b, pref, e)]
    gaps = np.concatenate([np.subtract(fps, q) for fps, q in zip(found, pref)])
    err = np.concatenate([(gaps <= 0).astype(float), [float(not fps) for fps in found]])
    out = numeric_outcome(err, ctx.tol, "indicator of (p* <= p_ref) or (no fixed point)", n)
    return Outcome(
        out.passed,
        "numeric",
        out.detail + f"; {gaps.size} fixed points (dynamics.fixed_points, row by row), "
        f"min(p* - p_ref) = {float(np.min(gaps, initial=np.inf)):.3g}",
        n,
    )


@register(
    "rec.boundaries",
    "p_ref = 0 gives h = 0 (absorbing: GRPO cannot create successes); p_ref = 1 gives h = 1",
    "Sec. 3; Thm 3 boundary cases",
    SEC,
    related=("num.edges",),
)
def boundaries(ctx: Context) -> Outcome:
    pr = sp.Symbol("p_ref", nonnegative=True)
    h = gb.h_derived(p, pr, beta, eps)  # Thm 8 form p_o e^{w+}/Z, defined at p_ref in {0, 1}
    ok = h.subs(pr, 0) == 0 and sp.cancel(h.subs(pr, 1)) == 1
    return Outcome(
        ok,
        "symbolic",
        "the derived h (gibbs.h_derived, Thm 8 form p_ref e^{w+/beta} / (p_ref e^{w+/beta} + "
        "(1-p_ref) e^{-w-/beta}); the logit form is undefined at p_ref in {0,1}): h = 0 at "
        "p_ref = 0, h = 1 at p_ref = 1, for all p; the product's maps there: num.edges",
    )


@register(
    "rec.h_at_one",
    "With eps > 0 and 0 < p_ref < 1, h(1) = sigma(logit p_ref + 1/(beta sqrt eps)) < 1: "
    "p = 1 is not an exact fixed point",
    "Sec. 3 (docs/theory.md Sec. 3)",
    SEC,
)
def h_at_one(ctx: Context) -> Outcome:
    pr = unit("u")
    h1 = h_of_r(kk=(1 - pr) / pr, rr=sp.sqrt(eps))
    s1 = sp.sqrt(p * (1 - p) + eps).subs(p, 1)
    ok = s1 == sp.sqrt(eps) and positive(1 - h1)
    return Outcome(
        ok,
        "symbolic",
        f"at p = 1, sqrt(p(1-p)+eps) = sqrt(eps); 1 - h(1) = "
        f"{sp.factor(sp.cancel(1 - h1))} > 0 (exp > 0)",
    )


@register(
    "rec.stability",
    "At a fixed point h(p*) = p*: |h'(p*)| = B(p*)/beta, hence |h'(p*)| < 1 iff "
    "beta > B(p*), B(p) = p(1-p)|2p-1| / (2 (p(1-p)+eps)^{3/2})",
    "Thm 6; Lemma 1 (App. C)",
    SEC,
)
def stability(ctx: Context, B=None) -> Outcome:
    B = B_paper if B is None else B
    q = sp.Symbol("q", positive=True)  # q = 1 - p* > 0
    hh = sp.Symbol("H", positive=True)
    hp_at_fp = h_prime_paper(hh).subs(hh, p)  # fixed point: h(p*) = p*
    lhs = beta * sp.Abs(hp_at_fp.subs(r, sp.sqrt(p * (1 - p) + eps)).subs(1 - p, q))
    rhs = B(p, eps).subs(1 - p, q)
    s = sp.Symbol("s", positive=True)
    lhs, rhs = (v.subs(sp.sqrt(p * q + eps), s) for v in (lhs, rhs))
    ok = equal(lhs, rhs)
    return Outcome(
        ok,
        "symbolic",
        "with h = p* in h', q = 1-p*: beta |h'(p*)| - B(p*) reduces to 0 "
        "(|1-2p| = |2p-1|); since beta > 0, |h'| = B/beta < 1 iff beta > B"
        if ok
        else "beta |h'(p*)| and the stated B(p*) differ",
    )
