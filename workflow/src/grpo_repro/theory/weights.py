"""Sec. 2 (2.1-2.3, eq. (4)) and Sec. 5: the advantage weights of binary rewards.

Implements the symbolic weights every other theory module uses (looked up at call time, so a
mutated formula reaches every check): w+(p) = (1-p)/sqrt(p(1-p)+eps), w-(p) = p/sqrt(p(1-p)+eps),
Omega = w+ + w- (eq. 4) and the mean-only (Dr. GRPO, Sec. 5) weights, derived from A = r - p.
Checks: Bernoulli mean/variance; smoothed advantage values +w+(p), -w-(p) (eq. 4);
Omega(p) = w+ + w- = (p(1-p)+eps)^(-1/2); the eps = 0 weights sqrt((1-p)/p), sqrt(p/(1-p));
w+ strictly decreasing, w- strictly increasing on (0,1) (eps > 0 and eps = 0); w- > w+ iff
p > 1/2 (Sec. 2.1); the Dr. GRPO weights w+ = 1-p, w- = p as E[A | r = 1], -E[A | r = 0] of the
mean-only advantage (Sec. 5). The contrastive form and clipping identity are in clipping.py.
"""

from __future__ import annotations

import sympy as sp

from .core import (
    Context,
    Outcome,
    equal,
    positive,
    positive_on_unit_interval,
    reduce_mod_square,
    register,
    total_derivative,
)

SEC = "Sec. 2"
p = sp.Symbol("p", positive=True)  # success probability under pi_old, in (0,1)
eps = sp.Symbol("eps", positive=True)  # smoothing_eps of eq. (4)
eps0 = sp.Symbol("eps0", nonnegative=True)  # smoothing, eps >= 0 allowed
r = sp.Symbol("r", positive=True)  # r = sqrt(p(1-p)+eps)


def w_plus(pp, e):
    return (1 - pp) / sp.sqrt(pp * (1 - pp) + e)


def w_minus(pp, e):
    return pp / sp.sqrt(pp * (1 - pp) + e)


def omega(pp, e):
    return 1 / sp.sqrt(pp * (1 - pp) + e)


def advantage(reward, pp, e):
    """Smoothed whitened advantage of eq. (4): (r - p) / sqrt(p(1-p) + eps)."""
    return (reward - pp) / sp.sqrt(pp * (1 - pp) + e)


@register(
    "adv.bernoulli_moments",
    "A binary reward r ~ Bernoulli(p) has mean p and variance p(1-p)",
    "Sec. 2.1",
    SEC,
)
def bernoulli_moments(ctx: Context) -> Outcome:
    law = {1: p, 0: 1 - p}
    mean = sum(v * w for v, w in law.items())
    var = sum((v - mean) ** 2 * w for v, w in law.items())
    ok = equal(mean, p) and equal(var, p * (1 - p))
    return Outcome(
        ok,
        "symbolic",
        "E[r] = 1*p + 0*(1-p) = p; E[(r-p)^2] = p(1-p)^2 + (1-p)p^2 expands to p(1-p)",
    )


@register(
    "adv.smoothed_values",
    "Smoothed advantage (r-p)/sqrt(p(1-p)+eps) is +w+(p) at r=1 and "
    "-w-(p) at r=0, w+ = (1-p)/sqrt(p(1-p)+eps), w- = p/sqrt(p(1-p)+eps)",
    "Sec. 2.3, eq. (4)",
    SEC,
)
def smoothed_values(ctx: Context) -> Outcome:
    ok = equal(advantage(1, p, eps), w_plus(p, eps)) and equal(
        advantage(0, p, eps), -w_minus(p, eps)
    )
    return Outcome(ok, "symbolic", "A(1) - w+ and A(0) + w- expand to 0")


@register("adv.omega", "Omega(p) = w+(p) + w-(p) = 1/sqrt(p(1-p)+eps)", "Sec. 2.3; Thm 8", SEC)
def omega_identity(ctx: Context, claimed=None) -> Outcome:
    claimed = omega(p, eps) if claimed is None else claimed
    ok = equal(w_plus(p, eps) + w_minus(p, eps), claimed)
    return Outcome(
        ok,
        "symbolic",
        f"w+ + w- - ({claimed}) reduces to 0"
        if ok
        else f"w+ + w- - ({claimed}) does not reduce to 0",
    )


@register(
    "adv.unsmoothed_weights",
    "Without smoothing (eps=0): w+ = sqrt((1-p)/p), w- = sqrt(p/(1-p)) on (0,1)",
    "Sec. 2.1; Fig. 1",
    SEC,
)
def unsmoothed_weights(ctx: Context) -> Outcome:
    q = sp.Symbol("q", positive=True)  # q = 1 - p > 0
    wp = w_plus(p, 0).subs(1 - p, q)
    wm = w_minus(p, 0).subs(1 - p, q)
    ok = equal(wp, sp.sqrt(q / p)) and equal(wm, sp.sqrt(p / q))
    return Outcome(
        ok, "symbolic", "with q = 1-p > 0: q/sqrt(pq) = sqrt(q/p), p/sqrt(pq) = sqrt(p/q)"
    )


def _weight_slope(w_of_r, e):
    """(dw/dp) * 2 r^3 with r = sqrt(p(1-p)+e), reduced with r^2 = p(1-p)+e."""
    d = total_derivative(w_of_r, p, {r: (1 - 2 * p) / (2 * r)})
    return reduce_mod_square(sp.expand(d * 2 * r**3), r, p * (1 - p) + e)


@register(
    "adv.w_plus_decreasing",
    "w+ is strictly decreasing on (0,1), for eps > 0 and for eps = 0: "
    "dw+/dp = -(1-p+2eps)/(2(p(1-p)+eps)^(3/2)) < 0",
    "Sec. 2.1",
    SEC,
)
def w_plus_decreasing(ctx: Context) -> Outcome:
    num = _weight_slope((1 - p) / r, eps0)
    ok = (
        equal(num, -(1 - p + 2 * eps0))
        and positive_on_unit_interval(1 - p + 2 * eps0, p)
        and positive_on_unit_interval((1 - p).subs(eps0, 0), p)
    )
    return Outcome(
        ok,
        "symbolic",
        "chain rule with r = sqrt(p(1-p)+eps), dr/dp = (1-2p)/(2r); "
        "2r^3 dw+/dp reduces (r^2 = p(1-p)+eps) to -(1-p+2eps); 1-p+2eps > 0 on (0,1) for "
        "eps >= 0 (substitution p = t/(1+t), t > 0)",
    )


@register(
    "adv.w_minus_increasing",
    "w- is strictly increasing on (0,1), for eps > 0 and for eps = 0: "
    "dw-/dp = (p+2eps)/(2(p(1-p)+eps)^(3/2)) > 0",
    "Sec. 2.1",
    SEC,
)
def w_minus_increasing(ctx: Context) -> Outcome:
    num = _weight_slope(p / r, eps0)
    ok = (
        equal(num, p + 2 * eps0)
        and positive_on_unit_interval(p + 2 * eps0, p)
        and positive_on_unit_interval(p, p)
    )
    return Outcome(ok, "symbolic", "2r^3 dw-/dp reduces to p + 2eps > 0 on (0,1) for eps >= 0")


@register(
    "adv.w_minus_exceeds_w_plus",
    "Failures weigh more than successes iff success is likely: w-(p) > w+(p) iff p > 1/2 "
    "(equal at p = 1/2), for every eps >= 0",
    "Sec. 2.1",
    SEC,
)
def w_minus_exceeds_w_plus(ctx: Context) -> Outcome:
    t = sp.Symbol("t", positive=True)  # p = 1/2 + t/(2(1+t)) in (1/2, 1), p = 1/2 - ... in (0, 1/2)
    above = sp.Rational(1, 2) + t / (2 * (1 + t))
    below = sp.Rational(1, 2) - t / (2 * (1 + t))
    gap = w_minus(p, eps0) - w_plus(p, eps0)
    scaled = sp.cancel(gap * sp.sqrt(p * (1 - p) + eps0))  # = 2p - 1
    ok = (
        equal(scaled, 2 * p - 1)
        and positive(gap.subs(p, above))
        and positive(-gap.subs(p, below))
        and gap.subs(p, sp.Rational(1, 2)) == 0
    )
    return Outcome(
        ok,
        "symbolic",
        "(w- - w+) sqrt(p(1-p)+eps) = 2p - 1 and sqrt(.) > 0; sign proven on p = 1/2 +- t/(2(1+t)), "
        "t > 0 (both halves of (0,1)); w- = w+ at p = 1/2",
    )


def dr_weights(pp):
    """Dr. GRPO (mean-only advantage A = r - p, Sec. 5): (w+, w-) = (1-p, p)."""
    return 1 - pp, pp


@register(
    "var.dr_weights",
    "Dr. GRPO (mean-only, A = r - p): w+ = E[A | r=1] = 1-p, w- = -E[A | r=0] = p, so Omega = 1, "
    "and E_{pi_theta}[A] = w+ P_theta(r=1) - w- P_theta(r=0)",
    "Sec. 5",
    SEC,
)
def dr_weights_derived(ctx: Context, k: int = 4) -> Outcome:
    import itertools

    a = list(sp.symbols(f"a1:{k}", positive=True))
    a.append(1 - sum(a))  # pi_old, normalised
    b = list(sp.symbols(f"b1:{k}", positive=True))
    b.append(1 - sum(b))  # pi_theta, normalised
    n = 0
    for pat in itertools.product((0, 1), repeat=k):
        if not 0 < sum(pat) < k:
            continue
        mean = sum(ai * ri for ai, ri in zip(a, pat))  # E_{pi_old}[r], computed, not assumed
        adv = [ri - mean for ri in pat]
        p_s = sum(ai for ai, ri in zip(a, pat) if ri)
        e_s = sum(ai * x for ai, x, ri in zip(a, adv, pat) if ri) / p_s
        e_f = sum(ai * x for ai, x, ri in zip(a, adv, pat) if not ri) / (1 - p_s)
        wp, wm = dr_weights(p_s)
        obj = sum(bi * x for bi, x in zip(b, adv))
        pt_s = sum(bi for bi, ri in zip(b, pat) if ri)
        if not (
            equal(e_s, wp)
            and equal(-e_f, wm)
            and equal(wp + wm, 1)
            and equal(obj, wp * pt_s - wm * (1 - pt_s))
        ):
            return Outcome(False, "symbolic", f"Dr. weights disagree for reward pattern {pat}")
        n += 1
    return Outcome(
        True,
        "symbolic",
        f"K={k}, symbolic pi_old, pi_theta, all {n} non-trivial reward patterns: with A = r - "
        "E_old[r], E_old[A | r=1] and -E_old[A | r=0] reduce to the stated w+ = 1-p, w- = p "
        "(sum 1) and E_theta[A] = w+ P_theta(S) - w- P_theta(F)",
    )
