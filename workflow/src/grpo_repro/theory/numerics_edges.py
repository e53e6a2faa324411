"""The product's maps where random interior points never go: the boundaries p_ref, p in {0, 1},
eps = 0, Delta_R != 0 (Sec. 3, Prop. 1, Thm 2, 5, 9), and the scalar copy of H used for speed.

grpo_repro.dynamics.maps (the figures, the oracle, fixed_point) and the scalar H of
dynamics.fixed_points are evaluated at the edges and compared with the derived maps in the Thm 8
two-event form p_o e^{w+/beta} / (p_o e^{w+/beta} + (1 - p_o) e^{-w-/beta}) (gibbs.gibbs_pos of
the variant's anchor, mirror_dr.pos_step; the two-KL anchor PoS of Lemma 2-3), which is defined
at p_o in {0, 1}; limits (eps = 0, Omega -> inf) are taken by sympy. Also the erratum of Prop. 1
at eps = 0 (docs/theory.md Sec. 3): h's limits at 0 and 1 are both 1, so h is not discontinuous as
stated.

Completeness of the product's fixed points and 2-cycles (Prop. 1, Thm 2-3, 6; Fig 2, 4, the
bifurcation and fixed-point-map figures, fixed_point's predictions; section ORBITS_SEC):
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

import math

import numpy as np
import sympy as sp
from scipy.special import expit

from grpo_repro.dynamics import fixed_points as fxp
from grpo_repro.dynamics import maps as dyn

from . import gibbs as gb
from . import mirror_dr as md
from . import two_kl as tk
from . import weights as wts
from .core import Context, Outcome, log_uniform, numeric_outcome, register
from .numerics_maps import mp_function

SEC = "numerics (grpo_repro.dynamics, edges)"
P, PR, BETA, EPS, A, D = sp.symbols("p p_ref beta eps alpha Delta_R", nonnegative=True)
#: the edge grid: PoS values, p_ref values, smoothing (0 included), beta, alpha
EDGE_P = (0.0, 1.0, 0.3)
EDGE_EPS = (0.0, 1e-5, 0.1)
EDGE_BETA = (0.2, 5.0)
EDGE_ALPHA = 0.4


ARGS = (P, PR, EPS, BETA, A, D)


def _value(ref, subs: dict, fast) -> float:
    """The derived map at `subs`. An anchor without success (or failure) mass keeps it whatever
    the weights (Gibbs: pi_n ~ anchor e^{a/beta}); otherwise the Thm 8 form in 50-digit mpmath
    (`fast`), or where a weight is infinite (eps = 0 at p in {0, 1}) its one-sided limit
    p -> 0+ or 1- by sympy."""
    anchor, wp, wm = ref
    a_fast, g_fast = fast
    vals = [subs[k] for k in ARGS]
    a0 = a_fast(*vals)
    if a0 in (0.0, 1.0):
        return a0
    try:
        val = g_fast(*vals)
        if math.isfinite(val):
            return val
    except ZeroDivisionError:
        pass
    lim = _limit(ref, subs[EPS], subs[P])
    return float(lim.subs({k: sp.nsimplify(v) for k, v in subs.items() if k not in (P, EPS)}))


_LIMITS: dict = {}


def _limit(ref, eps: float, side: float):
    """One-sided limit of the Thm 8 form at p -> side (0+ or 1-), eps fixed, the other
    parameters symbolic (positive): computed once per map and side."""
    key = (ref, eps, side)
    if key not in _LIMITS:
        pos = {s: sp.Symbol(s.name, positive=True) for s in (PR, BETA, A, D)}
        anchor, wp, wm = ref
        e = gb.gibbs_pos(anchor, wp, wm, BETA).subs(EPS, sp.nsimplify(eps)).xreplace(pos)
        q = sp.Symbol("q", positive=True)  # p = q (p -> 0+) or p = 1 - q (p -> 1-)
        lim = sp.limit(e.subs(P, q if side == 0 else 1 - q), q, 0, "+")
        _LIMITS[key] = lim.xreplace({v: k for k, v in pos.items()})
    return _LIMITS[key]


def _references():
    """variant -> (anchor PoS, w+, w-) of its derived map: Thm 8 on the variant's anchor
    (mirror_dr.anchor_pos / step_weights); two-KL: the anchor pibar ~ pi_ref^alpha
    pi_{n-1}^(1-alpha) of Lemma 2, whose odds are p_ref^a p^(1-a) e^{Delta_R} :
    (1-p_ref)^a (1-p)^(1-a) (Lemma 3)."""
    out = {}
    for v in ("grpo", "mirror", "dr_grpo", "mirror_dr"):
        out[v] = (md.anchor_pos(v, P, PR), *md.step_weights(v, P, EPS))
    num = PR**A * P ** (1 - A) * sp.exp(D)
    bar = num / (num + (1 - PR) ** A * (1 - P) ** (1 - A))
    out["two_kl"] = (bar, wts.w_plus(P, EPS), wts.w_minus(P, EPS))
    out["two_kl_dr"] = (bar, *wts.dr_weights(P))
    return out


def _edge_cases():
    for v in dyn.VARIANTS:
        for p in EDGE_P:
            for pr in EDGE_P:
                if v.startswith("two_kl") and {p, pr} == {0.0, 1.0}:
                    continue  # pibar has no mass: pi_ref and pi_{n-1} have disjoint supports
                if p not in (0.0, 1.0) and pr not in (0.0, 1.0):
                    continue  # interior: num.recurrences_vs_symbolic
                for eps in EDGE_EPS:
                    if eps == 0 and v in md.MEAN_ONLY:
                        continue  # mean-only weights have no eps
                    for beta in EDGE_BETA:
                        yield v, p, pr, eps, beta


@register(
    "num.edges",
    "dynamics.maps at the boundaries equals the derived Thm 8 maps: p_ref = 0 absorbing and "
    "p_ref = 1 giving 1 for grpo, dr_grpo and the two-KL variants, 0 and 1 fixed by mirror and "
    "mirror Dr., h(0) = h(1) = sigma(logit p_ref + 1/(beta sqrt eps)) for eps > 0 and their eps = 0 "
    "limits; fixed_points / two_cycles return the boundary fixed point and no cycle",
    "Sec. 3 boundaries; Thm 2, 5, 9; Prop. 1",
    SEC,
)
def edges(ctx: Context) -> Outcome:
    refs = _references()
    fast = {
        v: (mp_function(a, ARGS), mp_function(gb.gibbs_pos(a, wp, wm, BETA), ARGS))
        for v, (a, wp, wm) in refs.items()
    }
    cache, errs, n = {}, [], 0
    for v, p, pr, eps, beta in _edge_cases():
        subs = {P: p, PR: pr, EPS: eps, BETA: beta, A: EDGE_ALPHA, D: 0}
        key = (v, p, pr, eps, beta)
        cache[key] = _value(refs[v], subs, fast[v])
        a = EDGE_ALPHA if v.startswith("two_kl") else None
        with np.errstate(divide="ignore"):
            x = np.log(p) - np.log1p(-p)
        got = [float(expit(dyn.step_logit(v, x, pr, beta, eps, alpha=a)))]
        got.append(float(dyn.recurrence(v, pr, beta, eps, 1, p0=p, alpha=a)[1]))
        if v == "grpo":
            got += [float(dyn.h(p, pr, beta, eps)), float(dyn.iterate_h(p, pr, beta, eps, 1)[1])]
        errs.extend(abs(g - cache[key]) if math.isfinite(g) else math.inf for g in got)
        n += 1
    for pr in (0.0, 1.0):  # boundary p_ref: one fixed point p* = p_ref, stable, no 2-cycle
        for eps in EDGE_EPS[1:]:
            for beta in EDGE_BETA:
                fps = fxp.fixed_points(beta, pr, eps)
                errs.append(0.0 if [f.p_star for f in fps] == [pr] else 1.0)
                errs.append(0.0 if fxp.two_cycles(beta, pr, eps) == [] else 1.0)
                for v in ("dr_grpo", "two_kl", "two_kl_dr"):
                    vf = fxp.variant_fixed_points(v, beta, pr, eps, alpha=EDGE_ALPHA, delta_r=0.3)
                    errs.append(0.0 if [f.p_star for f in vf] == [pr] else 1.0)
    out = numeric_outcome(
        np.array(errs),
        ctx.tol,
        f"absolute error of p_n at {n} edge cases (every variant; p or p_ref in {{0, 1}}, eps in "
        f"{EDGE_EPS}, beta in {EDGE_BETA}) and boundary fixed points / cycles",
        n,
    )
    return Outcome(out.passed, "numeric", out.detail + " (an edge grid, not random points)", n)


@register(
    "num.delta_r",
    "dynamics.maps.recurrence and variant_fixed_points with Delta_R != 0 (per step or constant) "
    "follow the Thm 9 map two_kl.two_kl_x_step with the same Delta_R: sign and size of the "
    "Renyi term",
    "Lemma 3; Thm 9",
    SEC,
)
def delta_r_maps(ctx: Context) -> Outcome:
    rng, n = ctx.rng, max(10, ctx.n_random // 4)
    x0, lr = rng.uniform(-6, 6, n), rng.uniform(-6, 6, n)
    beta, eps = log_uniform(rng, 0.1, 10, n), log_uniform(rng, 1e-5, 0.1, n)
    alpha = rng.uniform(0.05, 0.95, n)
    steps = 3
    dr = rng.normal(0, 1, (steps, n))
    errs = []
    for v, mean_only in (("two_kl", False), ("two_kl_dr", True)):
        xs = sp.Symbol("x", real=True)
        step = mp_function(
            tk.two_kl_x_step(xs, PR, A, BETA, EPS, D, mean_only), (xs, PR, A, BETA, EPS, D)
        )
        got = dyn.recurrence(
            v,
            expit(lr),
            beta,
            eps,
            steps,
            p0=expit(x0),
            alpha=alpha,
            delta_r=dr,
            return_logits=True,
        )
        for i in range(n):
            x = x0[i]
            for s in range(steps):
                x = step(x, lr[i], alpha[i], beta[i], eps[i], dr[s, i])
                errs.append(abs(got[s + 1, i] - x) / max(1.0, abs(x)))
            d = float(dr[0, i])
            for fp in fxp.variant_fixed_points(
                v, beta[i], float(expit(lr[i])), eps[i], alpha=alpha[i], delta_r=d
            ):
                xf = fp.logit_p_star
                errs.append(
                    abs(step(xf, lr[i], alpha[i], beta[i], eps[i], d) - xf) / max(1.0, abs(xf))
                )
    return numeric_outcome(
        np.array(errs),
        ctx.tol,
        f"error of logit p_n over {steps} steps with Delta_R ~ N(0, 1) per step, and of the fixed "
        "points' residual under constant Delta_R (relative to max(1, |x|))",
        n,
    )


@register(
    "num.scalar_map",
    "The scalar H of dynamics.fixed_points (used in its root searches for speed) equals "
    "dynamics.maps.h_logit on the search grids of fixed_points and two_cycles",
    "Thm 2",
    SEC,
)
def scalar_map(ctx: Context) -> Outcome:
    rng, n = ctx.rng, max(1, ctx.n_random // 10)
    errs = []
    for _ in range(n):
        beta, eps = (
            float(log_uniform(rng, 0.05, 20, 1)[0]),
            float(log_uniform(rng, 1e-6, 0.1, 1)[0]),
        )
        lr = float(rng.uniform(-9, 9))
        lo, hi = fxp._bounds(lr, beta, eps)
        grid = fxp._grid(lo, hi, beta, eps, 401, outer=50)
        grid = np.concatenate([grid, rng.uniform(-40, 40, 50)])
        vec = dyn.h_logit(grid, expit(lr), beta, eps)
        sca = np.array([fxp._H_scalar(float(x), lr, beta, eps) for x in grid])
        errs.append(np.abs(vec - sca) / np.maximum(1.0, np.abs(vec)))
    return numeric_outcome(
        np.concatenate(errs),
        ctx.tol,
        f"relative difference on the search grids of {n} random (beta, p_ref, eps)",
        n,
    )


@register(
    "err.prop1_eps_zero",
    "Literal Prop. 1: for eps = 0, h is discontinuous at 0 and 1",
    "Prop. 1 (App. C)",
    "Sec. 3",
    kind="erratum",
    related=("rec.continuity", "num.edges"),
)
def prop1_eps_zero(ctx: Context) -> Outcome:
    q = sp.Symbol("q", positive=True)
    pr = sp.Symbol("p_ref", positive=True)
    b = sp.Symbol("beta", positive=True)
    h0 = gb.h_derived(P, pr, b, 0)  # eps = 0: Omega = 1/sqrt(p(1-p))
    lim0 = sp.limit(h0.subs(P, q), q, 0, "+")
    lim1 = sp.limit(h0.subs(P, 1 - q), q, 0, "+")
    prod = [
        float(dyn.h(p, pr_, b_, 0.0))
        for p in (0.0, 1.0)
        for pr_ in (1e-4, 0.5)
        for b_ in (0.2, 5.0)
    ]
    conv = gb.gibbs_pos(pr, 0, 0, b)  # A = 0 when the group's variance is 0 (no signal)
    shown = lim0 == 1 and lim1 == 1 and all(v == 1.0 for v in prod) and sp.simplify(conv - pr) == 0
    return Outcome(
        shown,
        "symbolic",
        f"the literal reading is WRONG: with eps = 0 and 0 < p_ref < 1, lim h at p -> 0+ is {lim0} "
        f"and at p -> 1- is {lim1} (Omega -> inf, sympy), so h extends continuously to [0, 1] with "
        f"h(0) = h(1) = 1; dynamics.maps.h(0 or 1, p_ref, beta, 0) = {sorted(set(prod))}. What "
        "holds: the weights w+-, Omega are unbounded there, and under the convention A = 0 for a "
        f"zero-variance group (what implementations do) the step at p in {{0, 1}} is the Gibbs "
        f"policy with zero tilt, PoS {conv} = p_ref != 1: that map is discontinuous at 0 and 1",
    )


ORBITS_SEC = "numerics (grpo_repro.dynamics, orbits)"
#: the orbits' symbols, real (the edges' above are nonnegative)
X, LR, BETA_X, EPS_X = sp.symbols("x l_ref beta eps", real=True)
#: parameter sets in the region with several fixed points and 2-cycles (Prop. 1, Thm 6)
RICH = dict(beta=(1.0, 10.0), p_ref=(1e-4, 2e-2), eps=(1e-6, 1e-4))
#: the paper's "divergent" example: a stable 2-cycle around an unstable fixed point
PAPER_CYCLE = (5.0, 1e-3, 1e-5)


def _derived_H():
    """H(x) and H'(x), the derived GRPO map in logit coordinates (numpy and mpmath)."""
    q = sp.Symbol("q", positive=True)
    incr = md.log_odds_increment("grpo", q).subs({md.beta: BETA_X, md.eps: EPS_X})
    h_x = LR + incr.subs(q, 1 / (1 + sp.exp(-X)))
    args = (X, LR, BETA_X, EPS_X)
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
    ORBITS_SEC,
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
