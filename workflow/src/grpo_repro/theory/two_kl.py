"""Sec. 5 / App. E: GRPO with two KL regularizers, beta[alpha KL(pi||pi_ref) + (1-alpha)
KL(pi||pi_{n-1})]: Lemma 2 (geometric-mean anchor), Lemma 3 (anchor log-odds with Renyi
divergences), Thm 9 (PoS recurrence, from the Gibbs policy of gibbs.gibbs on that anchor),
amplification when D_alpha(S) <= D_alpha(F), the fixed points and contraction rate 1 - alpha of
the mean-only recurrence, and the lack of monotonicity (an interval-certified counterexample of
the mean+variance recurrence with Delta_R = 0).

`two_kl_x_step` is the Thm 9 map in logit coordinates, x_n = alpha L + (1-alpha) x_{n-1} +
Delta_R + Omega(sigma(x_{n-1}))/beta (mean-only: 1/beta), used by the counterexample and by the
comparison with grpo_repro.dynamics (numerics_*.py).
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from scipy.special import logsumexp

from grpo_repro import variants as reg
from grpo_repro.dynamics import maps as dyn
from grpo_repro.dynamics import oracle as orc

from . import gibbs as gb
from . import weights as wts
from .core import (
    Context,
    Outcome,
    equal,
    is_zero,
    iv_function,
    iv_of,
    numeric_outcome,
    positive,
    register,
    sigma,
    unit,
)

SEC = "Sec. 5 / App. E"
eps = sp.Symbol("eps", positive=True)
beta = sp.Symbol("beta", positive=True)
alpha = sp.Symbol("alpha", positive=True)
L = sp.Symbol("L", real=True)  # logit p_ref


def two_kl_x_step(x_prev, l_ref, a, b, e, delta_r=0, mean_only=False):
    """Thm 9 in logit coordinates (Delta_R given): the two-KL PoS map x_{n-1} -> x_n."""
    incr = 1 / b if mean_only else wts.omega(sigma(x_prev), e) / b
    return a * l_ref + (1 - a) * x_prev + delta_r + incr


def _kl(pi, q):
    return sum(x * sp.log(x / y) for x, y in zip(pi, q))


@register(
    "var.two_kl_anchor",
    "Lemma 2: alpha KL(pi||pi_ref) + (1-alpha) KL(pi||pi_o) = KL(pi||pibar) - "
    "log Zbar, pibar = pi_ref^alpha pi_o^(1-alpha)/Zbar (geometric-mean anchor)",
    "Lemma 2 (App. E)",
    SEC,
)
def two_kl_anchor(ctx: Context, k: int = 4) -> Outcome:
    pis = list(sp.symbols(f"pi1:{k}", positive=True))
    pi = pis + [1 - sum(pis)]
    ref = sp.symbols(f"r1:{k + 1}", positive=True)
    old = sp.symbols(f"o1:{k + 1}", positive=True)
    zbar = sum(x**alpha * y ** (1 - alpha) for x, y in zip(ref, old))
    bar = [x**alpha * y ** (1 - alpha) / zbar for x, y in zip(ref, old)]
    lhs = alpha * _kl(pi, ref) + (1 - alpha) * _kl(pi, old)
    ok = is_zero(lhs - _kl(pi, bar) + sp.log(zbar)) and equal(sum(bar), 1)
    return Outcome(
        ok,
        "symbolic",
        f"K={k}, pi on the simplex, symbolic pi_ref, pi_o: difference is linear in "
        "logs and cancels; constant = -log Zbar (independent of pi)",
    )


def _renyi(P, Q, a=alpha):
    return sp.log(sum(x**a * y ** (1 - a) for x, y in zip(P, Q))) / (a - 1)


def _conditional_family(tag):
    """K=4 outcomes (2 successes, 2 failures) written as (event mass) x (conditional law), every
    factor a free positive symbol: the identities are then proven for all positive values, in
    particular for normalised ones (p_S + p_F = 1, conditional laws summing to 1)."""
    ps, pf = sp.symbols(f"pS_{tag} pF_{tag}", positive=True)
    s = list(sp.symbols(f"s1_{tag} s2_{tag}", positive=True))
    f = list(sp.symbols(f"f1_{tag} f2_{tag}", positive=True))
    return (ps, pf), s, f, [ps * s[0], ps * s[1], pf * f[0], pf * f[1]]


def _log_odds(weights, pattern):
    top = sum(w for w, r in zip(weights, pattern) if r)
    bot = sum(w for w, r in zip(weights, pattern) if not r)
    prep = lambda e: sp.factor_terms(sp.expand_power_base(e, force=True))  # noqa: E731
    return sp.log(prep(top)) - sp.log(prep(bot))


def _logit2(pair):
    return sp.log(pair[0] / pair[1])


PATTERN = (1, 1, 0, 0)


def delta_renyi(ref_s, ref_f, old_s, old_f):
    return (1 - alpha) * (_renyi(ref_f, old_f) - _renyi(ref_s, old_s))


@register(
    "var.two_kl_logodds",
    "Lemma 3: logit pibar(S) = alpha logit p_ref + (1-alpha) logit p_o + "
    "(1-alpha)[D_alpha(pi_ref,F||pi_o,F) - D_alpha(pi_ref,S||pi_o,S)]",
    "Lemma 3 (App. E)",
    SEC,
)
def two_kl_logodds(ctx: Context) -> Outcome:
    pr, rs, rf, ref = _conditional_family("ref")
    po, os_, of, old = _conditional_family("o")
    bar = [x**alpha * y ** (1 - alpha) for x, y in zip(ref, old)]  # Zbar cancels in the odds
    rhs = alpha * _logit2(pr) + (1 - alpha) * _logit2(po) + delta_renyi(rs, rf, os_, of)
    ok = is_zero(_log_odds(bar, PATTERN) - rhs)
    return Outcome(
        ok,
        "symbolic",
        "2 success + 2 failure outcomes, pi = PoS x conditional law; the odds of "
        "pibar factor into p_ref^a p_o^(1-a) x Renyi sums; difference cancels (linear in logs)",
    )


@register(
    "var.two_kl_recurrence",
    "Thm 9: logit p_n = alpha logit p_ref + (1-alpha) logit p_{n-1} + Delta_R + "
    "Omega(p_{n-1})/beta, Delta_R = (1-alpha)[D_alpha(F) - D_alpha(S)]",
    "Thm 9 (App. E)",
    SEC,
)
def two_kl_recurrence(ctx: Context) -> Outcome:
    pr, rs, rf, ref = _conditional_family("ref")
    po, os_, of, old = _conditional_family("o")
    zbar = sum(x**alpha * y ** (1 - alpha) for x, y in zip(ref, old))
    bar = [x**alpha * y ** (1 - alpha) / zbar for x, y in zip(ref, old)]
    wp, wm = sp.symbols("w_p w_m", positive=True)  # w+-(p_{n-1})
    adv = [wp if r else -wm for r in PATTERN]
    new, _ = gb.gibbs(bar, adv, beta)  # Thm 8 with anchor pibar (Lemma 2)
    rhs = (
        alpha * _logit2(pr)
        + (1 - alpha) * _logit2(po)
        + delta_renyi(rs, rf, os_, of)
        + (wp + wm) / beta
    )
    q = sp.Symbol("q", positive=True)
    ok = is_zero(_log_odds(new, PATTERN) - rhs) and equal(
        wts.w_plus(q, eps) + wts.w_minus(q, eps), wts.omega(q, eps)
    )
    return Outcome(
        ok,
        "symbolic",
        "exact optimum of the two-KL objective = Gibbs policy on the anchor pibar "
        "(Lemma 2 + Thm 8) with weights w+, w-; its log-odds minus the Thm 9 right side (with "
        "w+ + w- in place of Omega) cancel; w+(p) + w-(p) = Omega(p)",
    )


_RENYI: dict = {}


def _renyi_function(ns: int, nf: int):
    """Thm 9's Delta_R (two_kl.delta_renyi) on conditionals of ns successes and nf failures,
    lambdified (numpy) once per (ns, nf)."""
    if (ns, nf) not in _RENYI:
        laws = [
            list(sp.symbols(f"{t}1:{m + 1}", positive=True))
            for t, m in (("rs", ns), ("rf", nf), ("os", ns), ("of", nf))
        ]
        expr = delta_renyi(*laws)
        _RENYI[(ns, nf)] = sp.lambdify([*laws, alpha], expr, "numpy")
    return _RENYI[(ns, nf)]


def renyi_reference(log_ref, log_prev, reward, alpha) -> np.ndarray:
    """Thm 9's Delta_R (delta_renyi, lambdified) on the actual conditionals of log-policies
    (prompts x K), per prompt; 0 without successes or failures."""
    out = np.zeros(len(reward))
    for q in range(len(reward)):
        s, f = reward[q] > 0.5, reward[q] < 0.5
        if not s.any() or not f.any():
            continue
        ref, prev = np.exp(log_ref[q]), np.exp(log_prev[q])
        cond = [list(v[m] / v[m].sum()) for v in (ref, prev) for m in (s, f)]
        out[q] = float(_renyi_function(int(s.sum()), int(f.sum()))(*cond, alpha))
    return out


@register(
    "var.two_kl_recurrence_numeric",
    "Thm 9 recurrence at random K, pi_ref, pi_{n-1}, rewards, alpha, "
    "beta, eps (direct computation of pibar and of the Gibbs optimum)",
    "Lemma 2-3; Thm 9",
    SEC,
)
def two_kl_recurrence_numeric(ctx: Context) -> Outcome:
    """The library's exact step (oracle.gibbs_step on oracle.two_kl_anchor) and its map
    (maps.step_logit with oracle.delta_r) against Thm 9 as derived here (two_kl_x_step with
    Delta_R = delta_renyi on the actual conditionals, lambdified); sets of 10 prompts."""
    thm9 = sp.lambdify(xs := sp.symbols("x l a b e d"), two_kl_x_step(*xs), "numpy")
    rng, n_sets = ctx.rng, max(1, ctx.n_random // 10)

    def odds(lp, s):  # logit of the PoS of log-policies lp (prompts x K), successes s
        return logsumexp(lp, axis=1, b=s) - logsumexp(lp, axis=1, b=~s)

    err = []
    for _ in range(n_sets):
        prob = orc.make_problem(10, int(rng.integers(2, 9)), int(rng.integers(1 << 30)), 2.0, False)
        ref, rew, s = prob.log_pi_ref, prob.reward, prob.reward > 0.5
        old = orc.perturbed_policy(prob, int(rng.integers(1 << 30)), scale=2.0)
        a, b, e = rng.uniform(0.05, 0.95), 10 ** rng.uniform(-1, 1), 10 ** rng.uniform(-4, 0)
        rhs = thm9(odds(old, s), odds(ref, s), a, b, e, renyi_reference(ref, old, rew, a))
        anchor = orc.two_kl_anchor(ref, old, a)
        new = orc.gibbs_step(anchor, rew, orc.pos(old, rew), b, e, reg.get("two_kl"))
        dr = orc.delta_r(ref, old, rew, a)
        step = dyn.step_logit("two_kl", odds(old, s), prob.p_ref, b, e, alpha=a, delta_r=dr)
        err.append(np.maximum(abs(odds(new, s) - rhs), abs(step - rhs)) / np.maximum(1, abs(rhs)))
    what = "relative error of logit p_n (oracle Gibbs step; maps.step_logit) vs Thm 9, K in 2..8"
    return numeric_outcome(np.concatenate(err), ctx.tol, what, 10 * n_sets)


@register(
    "var.two_kl_amplification",
    "Two KL: if D_alpha(S) <= D_alpha(F) at every step (Delta_R >= 0), then "
    "logit p_n > logit p_ref for all n >= 1 (amplification)",
    "Thm 9 (App. E)",
    SEC,
)
def two_kl_amplification(ctx: Context) -> Outcome:
    a = unit("t")  # alpha in (0,1)
    g, dr = sp.symbols(
        "g Delta_R", nonnegative=True
    )  # x_{n-1} - L >= 0 (base: g = 0), Delta_R >= 0
    w = sp.Symbol("W", positive=True)  # Omega(p_{n-1})/beta > 0
    x_prev = L + g
    x_next = a * L + (1 - a) * x_prev + dr + w
    ok = positive(sp.cancel(x_next - L)) and positive(1 - a)
    return Outcome(
        ok,
        "symbolic",
        f"induction: x_n - logit p_ref = {sp.factor(sp.cancel(x_next - L))} > 0 with "
        "alpha = t/(1+t), x_{n-1} - logit p_ref = g >= 0 (g = 0 at n = 1), Delta_R >= 0, W = Omega/beta > 0",
    )


@register(
    "var.two_kl_fixed_points",
    "Two KL fixed points: mean-only logit p* = logit p_ref + Delta*/alpha + "
    "1/(alpha beta), contraction rate 1-alpha; mean+variance logit p* = logit p_ref + Delta*/alpha + "
    "Omega(p*)/(alpha beta)",
    "Thm 9; Sec. 5 (App. E)",
    SEC,
)
def two_kl_fixed_points(ctx: Context) -> Outcome:
    x, x_prev, dlt, om = sp.symbols("x x_prev Delta Omega", real=True)
    mean_only = sp.solve(sp.Eq(x, alpha * L + (1 - alpha) * x + dlt + 1 / beta), x)
    ok1 = len(mean_only) == 1 and equal(mean_only[0], L + dlt / alpha + 1 / (alpha * beta))
    step = alpha * L + (1 - alpha) * x_prev + dlt + 1 / beta
    ok2 = ok1 and equal(step - mean_only[0], (1 - alpha) * (x_prev - mean_only[0]))
    mv = sp.solve(sp.Eq(x, alpha * L + (1 - alpha) * x + dlt + om / beta), x)
    ok3 = len(mv) == 1 and equal(mv[0], L + dlt / alpha + om / (alpha * beta))
    return Outcome(
        ok1 and ok2 and ok3,
        "symbolic",
        "linear fixed-point equations solved; x_n - x* = "
        "(1-alpha)(x_{n-1} - x*) for constant Delta_R (contraction, 0 < 1-alpha < 1)",
    )


#: the counterexample to monotonicity: alpha, beta, p_ref, eps (Delta_R = 0: pi_0 = pi_ref)
NON_MONOTONE = dict(
    alpha=sp.Rational(9, 10), beta=5, p_ref=sp.Rational(1, 1000), eps=sp.Rational(1, 10**5)
)


@register(
    "var.two_kl_not_monotone",
    "Two KL (mean+variance): the PoS sequence is not monotone in general: with Delta_R = 0 "
    "(pi_0 = pi_ref), alpha = 9/10, beta = 5, p_ref = 1/1000, eps = 1e-5: p_0 < p_1 > p_2",
    "Thm 9 (App. E: 'no monotonicity')",
    SEC,
)
def two_kl_not_monotone(ctx: Context, params=None) -> Outcome:
    prm = NON_MONOTONE if params is None else params
    x, lr, a, b, e = sp.symbols("x l_ref a b e", real=True)
    step = iv_function(two_kl_x_step(x, lr, a, b, e), (x, lr, a, b, e))
    pr = iv_of(prm["p_ref"])
    args = [iv_of(prm[k]) for k in ("alpha", "beta", "eps")]
    from mpmath import iv

    x0 = iv.log(pr / (1 - pr))
    x1 = step(x0, x0, *args)
    x2 = step(x1, x0, *args)
    up = (x1 - x0).a > 0  # lower end of the enclosure of x_1 - x_0
    down = (x2 - x1).b < 0  # upper end of the enclosure of x_2 - x_1
    return Outcome(
        bool(up and down),
        "exact",
        f"alpha = {prm['alpha']}, beta = {prm['beta']}, p_ref = {prm['p_ref']}, eps = "
        f"{prm['eps']}, Delta_R = 0 (exact from pi_0 = pi_ref, see the oracle): interval "
        f"enclosures x_1 - x_0 in [{float((x1 - x0).a):.4g}, {float((x1 - x0).b):.4g}], "
        f"x_2 - x_1 in [{float((x2 - x1).a):.4g}, {float((x2 - x1).b):.4g}]: logit p_n rises "
        "then falls (Omega(p_1) < alpha Omega(p_0))",
    )
