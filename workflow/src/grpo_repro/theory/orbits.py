"""Sec. 3 / App. C, Prop. 1 and Thm 6: what the orbits of h do, certified at stated parameters.

h and h' are the checked formulas of recurrence.py (h_of_r, tied to the Gibbs derivation by
rec.h_from_gibbs, and h_prime_paper, proven by rec.h_prime), evaluated in interval arithmetic
(mpmath.iv, outward rounding) at rational parameters, so every sign and inclusion below is proven
for those parameters (method `exact`):
- Prop. 1 (fixed points exist, not necessarily unique): sign changes of h(p) - p at rational
  points, so several fixed points by the intermediate value theorem (h continuous, rec.continuity);
- no global convergence: a stable 2-cycle (the paper's example beta = 5, p_ref = 1/1000,
  eps = 1e-5): an interval J that h o h maps into itself with |(h o h)'| <= c < 1 on J and
  h(J) disjoint from J (Banach: a unique 2-cycle point in J attracting J, not a fixed point);
- Thm 6 (local part): |h'(p*)| < 1 gives convergence from a neighbourhood: intervals J around
  stable fixed points with h(J) in J and sup_J |h'| < 1, and numerically at random parameters.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from mpmath import iv

from grpo_repro.dynamics import maps as dyn

from . import recurrence as rec
from .core import Context, Outcome, iv_function, iv_of, log_uniform, numeric_outcome, register

SEC = "Sec. 3 / App. C"
R = sp.Rational
_P, _PR, _B, _E = sp.symbols("p p_ref beta eps", positive=True)
DPS = 400  # h(1) - 1 ~ -1e-137 at eps = 1e-5: the enclosures need that many digits


def _h_expr():
    return rec.h_of_r(kk=(1 - _PR) / _PR, b=_B, rr=sp.sqrt(_P * (1 - _P) + _E))


def interval_maps(dps: int = DPS):
    """(h, h') as interval functions of (p, p_ref, beta, eps), from the checked formulas."""
    h = _h_expr()
    hp = rec.h_prime_paper(h, _P, _B, sp.sqrt(_P * (1 - _P) + _E))
    args = (_P, _PR, _B, _E)
    return iv_function(h, args, dps), iv_function(hp, args, dps)


def _params(beta, p_ref, eps):
    return iv_of(p_ref), iv_of(beta), iv_of(eps)


#: Prop. 1 witness: (beta, p_ref, eps) and rational points where h(p) - p alternates in sign
SEVERAL_FIXED_POINTS = dict(
    beta=1, p_ref=R(1, 5), eps=R(1, 10**5), points=(R(0), R(4, 5), R(99, 100), R(1))
)


@register(
    "rec.several_fixed_points",
    "Prop. 1: fixed points exist but need not be unique: at beta = 1, p_ref = 1/5, eps = 1e-5, "
    "h(p) - p changes sign 3 times on [0, 1], so h has at least 3 fixed points",
    "Prop. 1 (App. C)",
    SEC,
)
def several_fixed_points(ctx: Context, witness=None) -> Outcome:
    w = SEVERAL_FIXED_POINTS if witness is None else witness
    h, _ = interval_maps()
    pr, b, e = _params(w["beta"], w["p_ref"], w["eps"])
    signs, encl = [], []
    for q in w["points"]:
        g = h(iv_of(q), pr, b, e) - iv_of(q)
        signs.append(1 if g.a > 0 else (-1 if g.b < 0 else 0))
        encl.append(f"{float(g.mid):.3g}")
    changes = sum(1 for s, t in zip(signs, signs[1:]) if s * t < 0)
    ok = 0 not in signs and changes >= 2
    return Outcome(
        ok,
        "exact",
        f"beta = {w['beta']}, p_ref = {w['p_ref']}, eps = {w['eps']}: h(p) - p at p = "
        f"{', '.join(str(q) for q in w['points'])} has certified signs {signs} (values ~ "
        f"{', '.join(encl)}; {DPS}-digit intervals): {changes} sign changes, so >= {changes} "
        "fixed points (intermediate value theorem, h continuous for eps > 0)",
    )


#: the paper's "divergent" example and an interval around the smaller point of its 2-cycle
TWO_CYCLE = dict(
    beta=5, p_ref=R(1, 1000), eps=R(1, 10**5), lo=R(2337542, 10**9), hi=R(2338542, 10**9)
)


@register(
    "rec.stable_two_cycle",
    "No global convergence: at beta = 5, p_ref = 0.001, eps = 1e-5 (the paper's divergent "
    "example) h has a stable 2-cycle ~ 0.0023380 <-> 0.0587158 with multiplier ~ 0.77",
    "Sec. 3 (Thm 6 discussion); docs/theory.md Sec. 3",
    SEC,
)
def stable_two_cycle(ctx: Context, case=None) -> Outcome:
    c = TWO_CYCLE if case is None else case
    h, hp = interval_maps(60)
    pr, b, e = _params(c["beta"], c["p_ref"], c["eps"])
    u, v = iv_of(c["lo"]), iv_of(c["hi"])
    half = iv_of(R(1, 2))
    # h is decreasing on [0, 1/2] (rec.h_shape): images of intervals there are [h(hi), h(lo)]
    hu, hv = h(u, pr, b, e), h(v, pr, b, e)
    image = iv.mpf([hv.a, hu.b])  # encloses h(J)
    in_left = v.b < half.a and image.b < half.a
    hhu, hhv = h(hu, pr, b, e), h(hv, pr, b, e)  # h(h(lo)), h(h(hi)) (hu, hv: enclosures)
    maps_into = hhu.a > u.b and hhv.b < v.a  # h o h increasing: h o h (J) inside J
    disjoint = image.a > v.b  # h(J) lies to the right of J: no fixed point of h in J
    j = iv.mpf([u.a, v.b])
    mult = hp(image, pr, b, e) * hp(j, pr, b, e)  # encloses (h o h)' on J
    contracts = abs(mult).b < 1
    ok = bool(in_left and maps_into and disjoint and contracts)
    return Outcome(
        ok,
        "exact",
        f"beta = {c['beta']}, p_ref = {c['p_ref']}, eps = {c['eps']}, J = [{c['lo']}, {c['hi']}] "
        f"(interval arithmetic): h(J) in [{float(image.a):.7f}, {float(image.b):.7f}] (disjoint "
        f"from J, inside [0, 1/2] where h decreases), h o h (J) inside J: {maps_into}, "
        f"(h o h)' on J in [{float(mult.a):.4f}, {float(mult.b):.4f}] (|.| < 1: {contracts}); by "
        "Banach a unique 2-cycle point in J attracts all of J, and it is not a fixed point",
    )


#: stable fixed points and intervals around them: (beta, p_ref, eps, lo, hi)
LOCAL_CASES = (
    (1, R(1, 5), R(1, 10**5), R(66, 100), R(70, 100)),  # p* ~ 0.6813, h' ~ 0.39
    (3, R(1, 100), R(1, 10**4), R(45, 1000), R(48, 1000)),  # p* ~ 0.0467, h' ~ -0.71
    (5, R(3, 10), R(1, 10**5), R(30, 100), R(45, 100)),  # p* < 1/2, |h'| small
)


def _invariant_contracting(h, hp, beta, p_ref, eps, lo, hi, pieces=16):
    """(h(J) inside J, sup_J |h'| enclosure upper end) for J = [lo, hi] on one side of 1/2."""
    pr, b, e = _params(beta, p_ref, eps)
    u, v = iv_of(lo), iv_of(hi)
    hu, hv = h(u, pr, b, e), h(v, pr, b, e)
    if hi <= R(1, 2):  # decreasing: h(J) = [h(hi), h(lo)]
        inside = hv.a > u.b and hu.b < v.a
    elif lo >= R(1, 2):  # increasing: h(J) = [h(lo), h(hi)]
        inside = hu.a > u.b and hv.b < v.a
    else:
        return False, float("inf")
    edges = [lo + (hi - lo) * R(k, pieces) for k in range(pieces + 1)]
    sup = max(
        abs(hp(iv.mpf([iv_of(a).a, iv_of(z).b]), pr, b, e)).b for a, z in zip(edges, edges[1:])
    )
    return bool(inside), float(sup)


@register(
    "rec.local_convergence",
    "Thm 6 (local part): at a fixed point with |h'(p*)| < 1 the iteration converges from a "
    "neighbourhood: intervals J around stable fixed points with h(J) inside J and sup_J |h'| < 1",
    "Thm 6; Lemma 1 (App. C)",
    SEC,
)
def local_convergence(ctx: Context, cases=None) -> Outcome:
    h, hp = interval_maps(60)
    parts, ok = [], True
    for beta, p_ref, eps, lo, hi in LOCAL_CASES if cases is None else cases:
        inside, sup = _invariant_contracting(h, hp, beta, p_ref, eps, lo, hi)
        ok = ok and inside and sup < 1
        parts.append(
            f"(beta={beta}, p_ref={p_ref}, eps={eps}) J=[{lo}, {hi}]: h(J) in J {inside}, "
            f"sup |h'| <= {sup:.3f}"
        )
    return Outcome(
        ok,
        "exact",
        "; ".join(parts) + ". Interval arithmetic (h monotone on each side of 1/2, rec.h_shape; "
        "|h'| bounded on 16 sub-intervals); contraction of J into itself => every orbit from J "
        "converges to the unique fixed point in J (mean value theorem, Banach)",
    )


@register(
    "rec.local_convergence_numeric",
    "Thm 6 (local part) at random parameters: from p* +- delta, where |h'| < 1 on the whole "
    "interval, the iterates of h converge to every stable fixed point p* (dynamics.fixed_points)",
    "Thm 6; Lemma 1",
    SEC,
)
def local_convergence_numeric(ctx: Context) -> Outcome:
    rng, n = ctx.rng, ctx.n_random
    beta, eps = log_uniform(rng, 0.05, 20, 4 * n), log_uniform(rng, 1e-5, 1e-1, 4 * n)
    p_star = rng.uniform(1e-3, 1 - 1e-3, 4 * n)  # the fixed point, chosen first
    p_ref = 1 / (1 + np.exp(-(np.log(p_star / (1 - p_star)) - dyn.omega(p_star, eps) / beta)))
    keep = (np.abs(dyn.h_prime(p_star, p_ref, beta, eps)) < 0.95) & (p_ref > 1e-300)
    beta, eps, p_star, p_ref = (v[keep][:n] for v in (beta, eps, p_star, p_ref))
    delta = np.minimum(0.05, np.minimum(p_star, 1 - p_star) / 2)
    offs = np.linspace(-1, 1, 201)[:, None]
    for _ in range(40):  # halve delta where |h'| reaches 0.999 somewhere on p* +- delta
        grid = p_star + offs * delta
        bad = np.max(np.abs(dyn.h_prime(grid, p_ref, beta, eps)), axis=0) >= 0.999
        delta = np.where(bad, delta / 2, delta)
    starts = np.stack([p_star - delta, p_star + delta])
    end = dyn.iterate_h(starts, p_ref, beta, eps, 1000)[-1]
    return numeric_outcome(
        np.abs(end - p_star).ravel(),
        ctx.tol,
        "|p_1000 - p*| from both ends of p* +- delta (p* chosen first, p_ref solved for it, "
        "|h'(p*)| < 0.95, |h'| < 0.999 on the sampled interval)",
        len(p_star),
    )
