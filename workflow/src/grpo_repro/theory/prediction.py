"""Fixed-point predictions (grpo_repro.dynamics.prediction) from Thm 1-3 and Thm 6.

- pred.gibbs_kl_bernoulli: the Gibbs policy pi_ref exp(A/beta)/Z with a binary-reward advantage
  has KL(pi || pi_ref) = Bernoulli KL(p* || p_ref), since the tilt is constant on S and on F
  (sympy, K = 4, every reward pattern);
- pred.beta_eff_closed_form: beta = Omega(p)/(logit p - logit p_ref) makes p a fixed point of
  h = gibbs.h_derived, and is > 0 iff p > p_ref (sympy);
- pred.p_star_monotone: along a branch of fixed points, d logit p* / d logit p_ref =
  1/(1 - H'(x*)) (implicit function theorem), > 0 when |H'(x*)| < 1 (sympy);
- pred.library_numeric: gibbs_kl against the KL of exact Gibbs policies on random finite
  problems, beta_eff against h(p) = p, limit_from against dynamics.fixed_points / two_cycles and
  p_star_interval's monotonicity (numeric, tolerance of the stage).
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from grpo_repro import variants as reg
from grpo_repro.dynamics import fixed_points as fxp
from grpo_repro.dynamics import maps as dyn
from grpo_repro.dynamics import oracle as orc
from grpo_repro.dynamics import prediction as prd

from . import gibbs as gb
from . import weights as wts
from .core import Context, Outcome, equal, log_uniform, logit, numeric_outcome, positive, register

SEC = "Sec. 3 (predictions)"
K = 4
beta = sp.Symbol("beta", positive=True)


def bernoulli_kl(p, q):
    return p * sp.log(p / q) + (1 - p) * sp.log((1 - p) / (1 - q))


@register(
    "pred.gibbs_kl_bernoulli",
    "The Gibbs policy pi = pi_ref exp(A/beta)/Z with PoS p* has KL(pi || pi_ref) = p* log(p*/p_ref) "
    "+ (1-p*) log((1-p*)/(1-p_ref)) (the tilt is constant on the success and failure sets)",
    "Thm 1; Thm 8 (prediction of the KL at the fixed point)",
    SEC,
)
def gibbs_kl_bernoulli(ctx: Context, kl_formula=None) -> Outcome:
    kl_formula = bernoulli_kl if kl_formula is None else kl_formula
    raw = sp.symbols(f"r1:{K + 1}", positive=True)
    ref = [r / sum(raw) for r in raw]  # normalised, every factor a positive sum
    a, b = sp.symbols("a b", real=True)  # advantages w+ and -w- (any values)
    x, y = sp.symbols("X Y", positive=True)  # e^{a/beta}, e^{-b/beta}, named
    n = 0
    # up to a permutation of the outcomes (the claim is symmetric) a pattern is its |S| = 1..K-1
    for pat in [tuple(int(i < m) for i in range(K)) for m in range(1, K)]:
        pi, _ = gb.gibbs(ref, [a if r else -b for r in pat])
        pi = [v.xreplace({sp.exp(a / beta): x, sp.exp(-b / beta): y}) for v in pi]
        kl = sum(v * sp.log(sp.factor(v / o)) for v, o in zip(pi, ref))
        p_s = sp.factor(sum(v for v, r in zip(pi, pat) if r))
        q_s = sp.factor(sum(o for o, r in zip(ref, pat) if r))
        diff = (kl - kl_formula(p_s, q_s)).replace(
            sp.log, lambda z: sp.log(sp.factor(sp.cancel(z)))
        )
        if not equal(diff, 0):
            return Outcome(False, "symbolic", f"KL differs from the formula for pattern {pat}")
        n += 1
    return Outcome(
        True,
        "symbolic",
        f"K={K}, normalised symbolic pi_ref, symbolic tilts, {n} reward patterns (|S| = 1..{K - 1}, "
        "every pattern up to a permutation of the outcomes): "
        "KL(gibbs || pi_ref) - Bernoulli KL(P(S) || pi_ref(S)) is linear in logs and cancels",
    )


@register(
    "pred.beta_eff_closed_form",
    "beta_eff(p) = Omega(p)/(logit p - logit p_ref) makes p a fixed point of h, and beta_eff > 0 "
    "iff p > p_ref",
    "Thm 2; Thm 3",
    SEC,
)
def beta_eff_closed_form(ctx: Context) -> Outcome:
    u, w, eps = sp.symbols("u w eps", positive=True)
    p, pr = u / (1 + u), w / (1 + w)  # p, p_ref in (0, 1): logit p = log u, logit p_ref = log w
    b_eff = wts.omega(p, eps) / (sp.log(u) - sp.log(w))
    wp, wm = wts.w_plus(p, eps), wts.w_minus(p, eps)
    x, y = sp.symbols("X Y", positive=True)
    h = gb.h_derived(p, pr, b_eff, eps).xreplace({sp.exp(wp / b_eff): x, sp.exp(-wm / b_eff): y})
    odds = sp.cancel(sp.together(h / (1 - h)))  # = p_ref X / ((1 - p_ref) Y)
    expo = (wp + wm) / b_eff  # log(X/Y)
    ok_odds = equal(odds, pr / (1 - pr) * x / y)
    ok_expo = equal(
        sp.expand_log(expo, force=True), sp.expand_log(logit(p) - logit(pr), force=True)
    )
    # X/Y = e^{expo} = (p/(1-p)) / (p_ref/(1-p_ref)), so the odds of h are p/(1-p): h(p) = p
    v = sp.Symbol("v", positive=True)  # p > p_ref: logit p = logit p_ref + v
    sign = positive(wts.omega(p, eps) / v)
    return Outcome(
        ok_odds and ok_expo and sign,
        "symbolic",
        "h_derived at beta = beta_eff(p): odds = p_ref/(1-p_ref) X/Y with log(X/Y) = (w+ + w-)/beta_eff "
        "= logit p - logit p_ref, so the odds are p/(1-p) and h(p) = p; Omega > 0, so beta_eff > 0 "
        "iff logit p - logit p_ref > 0",
    )


@register(
    "pred.p_star_monotone",
    "Along a branch of fixed points x* = logit p*, d x*/d logit p_ref = 1/(1 - H'(x*)) > 0 where "
    "|H'(x*)| < 1: p* increases with p_ref on stable branches",
    "Thm 2; Thm 6 (implicit function theorem)",
    SEC,
)
def p_star_monotone(ctx: Context, claimed=None) -> Outcome:
    claimed = (lambda hp: 1 / (1 - hp)) if claimed is None else claimed
    x, lr, eps = sp.symbols("x l_ref eps", real=True)
    hx = lr + wts.omega(1 / (1 + sp.exp(-x)), eps) / beta  # H(x) = logit h(sigma(x))
    F = hx - x
    dxdl = -sp.diff(F, lr) / sp.diff(F, x)  # implicit function theorem
    Hp = sp.Symbol("Hp", real=True)
    ok = equal(dxdl.subs(sp.diff(hx, x), Hp), claimed(Hp))
    c = sp.Symbol("c", positive=True)  # |H'| < 1: H' = 1 - 2c/(1+c) with c > 0
    ok = ok and positive(claimed(1 - 2 * c / (1 + c)))
    return Outcome(
        ok,
        "symbolic",
        "F(x, l) = H(x) - x, dF/dl = 1: dx*/dl = -F_l/F_x = 1/(1 - H'(x*)); with H' = 1 - 2c/(1+c) "
        "in (-1, 1) (c > 0) it is > 0",
    )


@register(
    "pred.library_numeric",
    "dynamics.prediction: gibbs_kl = KL of exact Gibbs policies, h(p, beta_eff(p)) = p, "
    "limit_from lands on a stable fixed point / 2-cycle of dynamics.fixed_points, and "
    "p_star_interval is increasing on stable branches",
    "Thm 1-3, 6",
    SEC,
)
def library_numeric(ctx: Context) -> Outcome:
    rng, n = ctx.rng, ctx.n_random
    prob = orc.make_problem(n, 6, seed=int(rng.integers(1 << 30)), controls=False)
    b, e = log_uniform(rng, 0.1, 10, n), log_uniform(rng, 1e-5, 1e-1, n)
    adv = orc.advantage_table(prob.reward, rng.uniform(0.01, 0.99, n), 0.0, reg.get("dr_grpo"))
    log_pi = orc.log_normalise(prob.log_pi_ref + adv * rng.uniform(-5, 5, (n, 1)))
    kl = np.sum(np.exp(log_pi) * (log_pi - prob.log_pi_ref), axis=1)
    err_kl = np.abs(prd.gibbs_kl(orc.pos(log_pi, prob.reward), prob.p_ref) - kl) / np.maximum(1, kl)
    p = rng.uniform(1e-3, 1 - 1e-3, n)
    pr = p * rng.uniform(0.01, 0.99, n)
    bb = prd.beta_eff(p, pr, e)
    err_b = np.abs(dyn.h(p, pr, bb, e) - p) / p
    err_lim = []
    for beta, p_ref, eps in zip(b[:12], prob.p_ref[:12], e[:12]):
        kind, val = prd.limit_from(p_ref, beta, eps)
        if kind == "fixed_point":
            fps = [f.p_star for f in fxp.fixed_points(beta, p_ref, eps) if f.stable]
            err_lim.append(min(abs(val - f) for f in fps))
        elif kind == "two_cycle":
            cyc = [c for c in fxp.two_cycles(beta, p_ref, eps) if c.stable]
            err_lim.append(min(abs(val[0] - c.p_a) + abs(val[1] - c.p_b) for c in cyc))
    iv = prd.p_star_interval(0.05, 0.3, 2.0, 1e-3)
    mono = 0.0 if iv["monotone"] and iv["lo"] < iv["hi"] else 1.0
    err = np.concatenate([err_kl, err_b, np.array(err_lim), [mono]])
    out = numeric_outcome(err, ctx.tol, "KL, fixed-point and limit errors", n)
    return Outcome(out.passed, "numeric", out.detail + f"; {len(err_lim)} limits checked", n)
