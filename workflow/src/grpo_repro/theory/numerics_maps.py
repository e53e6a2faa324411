"""The numeric library against the checked formulas: eq. (4), Thm 2 (h), Prop. 1 (h'), Thm 6 (B),
Thm 4-5 / Sec. 5 / Thm 9 (one-step maps of every variant) and the fixed points (Thm 2-3, Sec. 5).

grpo_repro.dynamics (what the figures and the report compute with) is evaluated at random points
and compared with the symbolic expressions the other theory modules prove: weights.w_plus /
w_minus / omega, gibbs.h_derived and its sympy derivative, recurrence.B_paper,
mirror_dr.pos_step (Thm 8 with each variant's anchor and weights) and two_kl.two_kl_x_step.
rec.stability_numeric (kept under its id) compares complex-step derivatives of h at fixed points
with dynamics.maps.h_prime and B. References are evaluated in 50-digit mpmath (no overflow of e^{w/beta}); errors are relative,
tolerance `tol` of the stage (absolute below 1e-30, where 50 digits cannot resolve h(1-h)), so a wrong factor anywhere in the library fails a check here.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np
import sympy as sp
from scipy.special import expit

from grpo_repro.dynamics import fixed_points as fxp
from grpo_repro.dynamics import maps as dyn

from . import gibbs as gb
from . import mirror_dr as md
from . import recurrence as rec
from . import two_kl as tk
from . import weights as wts
from .core import Context, Outcome, log_uniform, numeric_outcome, register

SEC = "numerics (grpo_repro.dynamics)"
P, PR, BETA, X, LR, A = sp.symbols("p p_ref beta x l_ref alpha", positive=True)
EPS = sp.Symbol("eps", nonnegative=True)  # eps = 0 allowed (the unsmoothed weights)
DPS = 50


def mp_function(expr, args):
    mp.mp.dps = DPS
    f = sp.lambdify(args, expr, modules="mpmath")
    return lambda *vals: float(f(*(mp.mpf(float(v)) for v in vals)))


def _rel(a, b) -> np.ndarray:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.abs(a - b) / np.maximum(np.abs(b), 1e-30)  # absolute below 1e-30


def random_points(rng, n, eps_zero: float = 0.0):
    """n random (p, p_ref, beta, eps); a share `eps_zero` of them with eps = 0 (no smoothing)."""
    out = dict(
        p=rng.uniform(1e-3, 1 - 1e-3, n),
        p_ref=1 / (1 + np.exp(-rng.uniform(-8, 8, n))),
        beta=log_uniform(rng, 0.05, 20, n),
        eps=log_uniform(rng, 1e-6, 1, n),
    )
    out["eps"][: int(eps_zero * n)] = 0.0
    return out


@register(
    "num.maps_vs_symbolic",
    "dynamics.maps.w_plus, w_minus, omega, h, h_prime and B equal the checked symbolic "
    "w+, w-, Omega (eq. 4), h = gibbs.h_derived (Thm 1 -> 2), its derivative and B (Thm 6)",
    "eq. (4); Thm 2; Prop. 1; Thm 6",
    SEC,
)
def maps_vs_symbolic(ctx: Context) -> Outcome:
    n = ctx.n_random
    x = random_points(ctx.rng, n, eps_zero=0.25)
    h_sym = gb.h_derived(P, PR, BETA, EPS)
    refs = {
        "w_plus": (mp_function(wts.w_plus(P, EPS), (P, EPS)), ("p", "eps")),
        "w_minus": (mp_function(wts.w_minus(P, EPS), (P, EPS)), ("p", "eps")),
        "omega": (mp_function(wts.omega(P, EPS), (P, EPS)), ("p", "eps")),
        "h": (mp_function(h_sym, (P, PR, BETA, EPS)), ("p", "p_ref", "beta", "eps")),
        "h_prime": (
            mp_function(sp.diff(h_sym, P), (P, PR, BETA, EPS)),
            ("p", "p_ref", "beta", "eps"),
        ),
        "B": (mp_function(rec.B_paper(P, EPS), (P, EPS)), ("p", "eps")),
    }
    worst, errs = {}, []
    for name, (f, keys) in refs.items():
        ref = np.array([f(*(x[k][i] for k in keys)) for i in range(n)])
        got = getattr(dyn, name)(*(x[k] for k in keys))
        e = _rel(got, ref)
        worst[name] = float(np.max(e))
        errs.append(e)
    out = numeric_outcome(
        np.concatenate(errs), ctx.tol, "relative error of dynamics.maps vs the symbolic formulas", n
    )
    return Outcome(
        out.passed,
        "numeric",
        out.detail
        + "; worst per function: "
        + ", ".join(f"{k} {v:.1e}" for k, v in worst.items())
        + " (p in (1e-3, 1-1e-3), logit p_ref in (-8, 8), beta in (0.05, 20), eps = 0 at a quarter "
        "of the points (eps = 0 branch of eq. 4), else eps in (1e-6, 1))",
        n,
    )


def _variant_refs():
    out = {}
    q = sp.Symbol("q", positive=True)
    for v in ("grpo", "mirror", "dr_grpo", "mirror_dr"):
        # logit(anchor PoS) + the log-odds increment of the derived map (md.pos_step): no 1 - p_n
        anchor = md.anchor_pos(v, P, md.PREF)
        incr = md.log_odds_increment(v, q).subs(q, P)
        expr = (sp.log(anchor / (1 - anchor)) + incr).subs(
            {md.PREF: PR, md.eps: EPS, md.beta: BETA}
        )
        out[v] = mp_function(expr, (P, PR, BETA, EPS, A))
    for v, mean_only in (("two_kl", False), ("two_kl_dr", True)):
        step = tk.two_kl_x_step(sp.log(P / (1 - P)), LR, A, BETA, EPS, 0, mean_only)
        out[v] = mp_function(step.subs(LR, sp.log(PR / (1 - PR))), (P, PR, BETA, EPS, A))
    return out


@register(
    "num.recurrences_vs_symbolic",
    "dynamics.maps.step_logit of every variant equals the derived one-step map: Thm 8 PoS with "
    "the variant's anchor and weights (grpo, mirror, dr_grpo, mirror_dr), Thm 9 (two-KL)",
    "Thm 2, 4-5, 9; Sec. 5",
    SEC,
)
def recurrences_vs_symbolic(ctx: Context) -> Outcome:
    n = ctx.n_random
    x = random_points(ctx.rng, n)
    alpha = ctx.rng.uniform(0.05, 0.95, n)
    errs, worst = [], {}
    for v, f in _variant_refs().items():
        ref = np.array(
            [f(x["p"][i], x["p_ref"][i], x["beta"][i], x["eps"][i], alpha[i]) for i in range(n)]
        )
        a = alpha if v.startswith("two_kl") else None
        lp = np.log(x["p"] / (1 - x["p"]))
        got = dyn.step_logit(v, lp, x["p_ref"], x["beta"], x["eps"], alpha=a)
        e = np.abs(got - ref) / np.maximum(1.0, np.abs(ref))
        worst[v] = float(np.max(e))
        errs.append(e)
    out = numeric_outcome(
        np.concatenate(errs), ctx.tol, "error of logit p_n (relative to max(1, |logit p_n|))", n
    )
    worst_txt = ", ".join(f"{k} {v:.1e}" for k, v in worst.items())
    return Outcome(out.passed, "numeric", out.detail + f"; worst per variant: {worst_txt}", n)


@register(
    "num.fixed_points_vs_symbolic",
    "dynamics.fixed_points: every p* solves h_derived(p*) = p* with h'(p*) = the symbolic "
    "derivative; dr_grpo, two_kl_dr and two_kl fixed points and derivatives solve the derived "
    "maps (two-KL derivative = d/dx of the Thm 9 map at x*)",
    "Thm 2-3, 6; Sec. 5; Thm 9",
    SEC,
)
def fixed_points_vs_symbolic(ctx: Context, n_sets: int | None = None) -> Outcome:
    rng = ctx.rng
    n_sets = max(16, ctx.n_random // 20) if n_sets is None else n_sets
    h_sym = gb.h_derived(P, PR, BETA, EPS)
    hf = mp_function(h_sym, (P, PR, BETA, EPS))
    dh = mp_function(sp.diff(h_sym, P), (P, PR, BETA, EPS))
    dr_f = mp_function(md.pos_step("dr_grpo", P, PR, EPS, BETA), (P, PR, BETA, EPS))
    maps = {}
    for mean_only in (False, True):
        step = tk.two_kl_x_step(X, LR, A, BETA, EPS, 0, mean_only)
        maps[mean_only] = (
            mp_function(step - X, (X, LR, A, BETA, EPS)),
            mp_function(sp.diff(step, X), (X, LR, A, BETA, EPS)),
        )
    errs = []
    for _ in range(n_sets):
        beta, eps = (float(log_uniform(rng, lo, hi, 1)[0]) for lo, hi in ((0.05, 20), (1e-5, 0.1)))
        lr, alpha, q = float(rng.uniform(-8, 3)), float(rng.uniform(0.1, 0.9)), rng.uniform()
        p_ref = float(1 / (1 + np.exp(-lr)))
        for fp in fxp.fixed_points(beta, p_ref, eps):
            if fp.p_star < 1 - 1e-9:  # p* = 1.0 in floating point: no relative derivative test
                errs.append(abs(hf(fp.p_star, p_ref, beta, eps) - fp.p_star) / fp.p_star)
                errs.append(
                    abs(fp.h_prime - dh(fp.p_star, p_ref, beta, eps)) / max(1, abs(fp.h_prime))
                )
        (dr,) = fxp.variant_fixed_points("dr_grpo", beta, p_ref, eps)
        errs.append(abs(dr.p_star - dr_f(q, p_ref, beta, eps)) / dr.p_star)  # constant map
        for variant, mean_only in (("two_kl", False), ("two_kl_dr", True)):
            g, dg = maps[mean_only]
            for fp in fxp.variant_fixed_points(variant, beta, p_ref, eps, alpha=alpha):
                x = fp.logit_p_star
                if abs(x) < 30:
                    errs.append(abs(g(x, lr, alpha, beta, eps)) / max(1, abs(x)))
                    errs.append(
                        abs(fp.h_prime - dg(x, lr, alpha, beta, eps)) / max(1, abs(fp.h_prime))
                    )
    return numeric_outcome(
        np.array(errs),
        ctx.tol,
        f"relative residuals and derivative errors at every fixed point of {n_sets} random "
        "(beta, p_ref, eps, alpha) (grpo, dr_grpo, two_kl, two_kl_dr)",
        len(errs),
    )


@register(
    "rec.stability_numeric",
    "Complex-step h'(p*) at fixed points equals dynamics.maps.h_prime, |h'(p*)| = "
    "B(p*)/beta with dynamics.maps.B, and (|h'(p*)| < 1) == (beta > B(p*))",
    "Thm 6; Lemma 1",
    SEC,
)
def stability_numeric(ctx: Context, B=None) -> Outcome:
    B = dyn.B if B is None else B
    n, rng = ctx.n_random, ctx.rng
    ps = rng.uniform(1e-3, 1 - 1e-3, n)  # the fixed point, chosen first
    b = log_uniform(rng, 1e-2, 10, n)
    e = log_uniform(rng, 1e-6, 1, n)
    lr = np.log(ps / (1 - ps)) - 1 / (b * np.sqrt(ps * (1 - ps) + e))  # p_ref: ps fixed point
    step = 1e-30
    z = ps + 1j * step
    hz = 1.0 / (1.0 + np.exp(-(lr + 1.0 / np.sqrt(z * (1 - z) + e) / b)))
    fp_err = np.abs(hz.real - ps)
    dh = hz.imag / step
    # the library's h' (Prop. 1); where p_ref underflows (logit < -600), its logit-coordinate
    # derivative, which equals h'(p*) at a fixed point
    formula = np.where(
        lr > -600, dyn.h_prime(ps, expit(lr), b, e), dyn.h_prime_logit(np.log(ps / (1 - ps)), b, e)
    )
    bb = B(ps, e)
    scale = np.maximum(1.0, np.abs(dh))
    d_err = np.abs(dh - formula) / scale + np.abs(np.abs(dh) - bb / b) / scale
    clear = np.abs(b - bb) > 1e-6 * np.maximum(1, b)
    mismatch = ((np.abs(dh) < 1) != (b > bb)) & clear
    err = np.concatenate([fp_err, d_err, mismatch.astype(float)])
    out = numeric_outcome(
        err,
        ctx.tol,
        "max of |h(p*)-p*|, relative errors of h' and |h'| - B/beta, stability mismatch indicator",
        n,
    )
    return Outcome(
        out.passed,
        "numeric",
        out.detail + f"; {int((np.abs(dh) < 1).sum())} stable, "
        f"{int((np.abs(dh) >= 1).sum())} unstable points",
        n,
    )
