"""Sec. 4-5 / App. D-E: Mirror GRPO (Thm 4-5), Dr. GRPO and Mirror Dr. GRPO (Sec. 5), the
mean+variance = mean-only with beta_eff equivalence, and GRPO with two KL regularizers
(Lemma 2 geometric-mean anchor, Lemma 3 anchor log-odds with Renyi divergences, Thm 9 recurrence,
amplification when D_alpha(S) <= D_alpha(F), fixed points and contraction rate 1 - alpha).
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from scipy.special import logsumexp

from .advantage import w_minus, w_plus
from .core import (
    Context,
    Outcome,
    equal,
    is_zero,
    logit,
    numeric_outcome,
    positive,
    register,
    sigma,
)

SEC = "Sec. 4-5 / App. D-E"
p = sp.Symbol("p", positive=True)
eps = sp.Symbol("eps", positive=True)
beta = sp.Symbol("beta", positive=True)
alpha = sp.Symbol("alpha", positive=True)
L = sp.Symbol("L", real=True)  # logit p_ref
n = sp.Symbol("n", integer=True, nonnegative=True)


def omega(pp, e=eps):
    return 1 / sp.sqrt(pp * (1 - pp) + e)


def _unit(name):
    u = sp.Symbol(name, positive=True)
    return u / (1 + u)


def gibbs_pos(po, wp, wm, b=beta):
    """Thm 8 PoS, two-event form: p_o e^{w+/b} / (p_o e^{w+/b} + (1-p_o) e^{-w-/b})."""
    return po * sp.exp(wp / b) / (po * sp.exp(wp / b) + (1 - po) * sp.exp(-wm / b))


# ------------------------------------------------------------------------------- Mirror GRPO


@register(
    "var.mirror_recurrence",
    "Mirror GRPO (anchor pi_{n-1}): logit p_n = logit p_{n-1} + Omega(p_{n-1})/beta",
    "Thm 4; Thm 5 (App. D)",
    SEC,
)
def mirror_recurrence(ctx: Context) -> Outcome:
    pn = gibbs_pos(p, w_plus(p, eps), w_minus(p, eps))
    ok = equal(pn, sigma(logit(p) + omega(p) / beta))
    return Outcome(
        ok,
        "symbolic",
        "Thm 8 with anchor PoS p_o = p_{n-1} and weights w+-(p_{n-1}) equals "
        "sigma(logit p_{n-1} + Omega(p_{n-1})/beta) (exp split, cancel)",
    )


@register(
    "var.mirror_increasing",
    "Mirror GRPO is strictly increasing for interior p (p_n > p_{n-1}) and has "
    "no interior fixed point; 0 and 1 are its fixed points (p_ref = 0 absorbing)",
    "Thm 5 (App. D)",
    SEC,
)
def mirror_increasing(ctx: Context) -> Outcome:
    q = _unit("u")
    d = sp.Symbol("d", positive=True)  # exp(-Omega/beta) = 1/(1+d), Omega/beta > 0
    g = 1 / (1 + (1 - q) / q / (1 + d))
    inc = positive(g - q)
    x = sp.Symbol("X", positive=True)  # exp(Omega/beta) in the Thm 8 form
    g8 = p * x / (p * x + 1 - p)
    ends = g8.subs(p, 0) == 0 and sp.cancel(g8.subs(p, 1)) == 1
    return Outcome(
        inc and ends,
        "symbolic",
        f"g(p) - p = {sp.factor(sp.cancel(g - q))} > 0 with p = u/(1+u), "
        "exp(-Omega/beta) = 1/(1+d): g(p) = p has no solution in (0,1); Thm 8 form gives g(0) = 0, g(1) = 1",
    )


@register(
    "var.mirror_converges",
    "Mirror GRPO: p_n -> 1 for p_ref in (0,1), since Omega(p) >= 2/sqrt(1+4eps) "
    "gives logit p_n >= logit p_ref + 2n/(beta sqrt(1+4eps))",
    "Thm 5 (App. D)",
    SEC,
)
def mirror_converges(ctx: Context) -> Outcome:
    gap = sp.Rational(1, 4) + eps - (p * (1 - p) + eps)
    square = equal(gap, (p - sp.Rational(1, 2)) ** 2)  # p(1-p)+eps <= 1/4 + eps
    m = 2 / (beta * sp.sqrt(1 + 4 * eps))
    ok_m = equal(m, 1 / (beta * sp.sqrt(sp.Rational(1, 4) + eps)))
    g_prev, slack = sp.symbols(
        "g_prev slack", nonnegative=True
    )  # x_{n-1} - L - (n-1)m >= 0, Omega/beta - m >= 0
    x_prev = L + (n - 1) * m + g_prev
    x_next = x_prev + (m + slack)
    step = sp.expand(x_next - (L + n * m)).is_nonnegative
    lim = sp.limit(sigma(L + n * m), n, sp.oo)
    ok = square and ok_m and bool(step) and lim == 1
    return Outcome(
        ok,
        "symbolic",
        "1/4 + eps - (p(1-p)+eps) = (p-1/2)^2 >= 0, so Omega(p)/beta >= m = "
        "2/(beta sqrt(1+4eps)); induction step x_n - (L + n m) = g_prev + slack >= 0; "
        f"lim sigma(L + n m) = {lim}",
    )


# ------------------------------------------------------------------------------- Dr. GRPO


@register(
    "var.dr_weights", "Dr. GRPO (mean-only, A = r - p): w+ = 1-p, w- = p, Omega = 1", "Sec. 5", SEC
)
def dr_weights(ctx: Context) -> Outcome:
    def adv(reward):  # mean-only normalisation: A = r - mean, mean = p (adv.bernoulli_moments)
        return reward - p

    ok = equal(adv(1), 1 - p) and equal(-adv(0), p) and equal(adv(1) - adv(0), 1)
    return Outcome(
        ok, "symbolic", "A(1) = 1-p = w+, A(0) = -p = -w-; Omega = w+ + w- = A(1) - A(0) = 1"
    )


@register(
    "var.dr_grpo_one_step",
    "Dr. GRPO: logit p_n = logit p_ref + 1/beta; the fixed point "
    "sigma(logit p_ref + 1/beta) is reached in one step and kept",
    "Sec. 5",
    SEC,
)
def dr_grpo_one_step(ctx: Context) -> Outcome:
    pr = sp.Symbol("p_ref", positive=True)
    g = gibbs_pos(pr, 1 - p, p)  # anchor pi_ref, weights at p = p_{n-1}
    star = sigma(logit(pr) + 1 / beta)
    const = equal(sp.diff(g, p), 0) or is_zero(sp.diff(g, p))
    ok = const and equal(g, star) and equal(g.subs(p, star), star)
    return Outcome(
        ok,
        "symbolic",
        "Thm 8 PoS with anchor pi_ref and weights (1-p, p) equals "
        "sigma(logit p_ref + 1/beta) for every p (d/dp = 0): p_1 = p*, and p_n = p* for all n >= 1",
    )


@register(
    "var.mirror_dr_arithmetic",
    "Mirror Dr. GRPO: logit p_n = logit p_ref + n/beta (arithmetic progression), p_n -> 1",
    "Sec. 5",
    SEC,
)
def mirror_dr_arithmetic(ctx: Context) -> Outcome:
    q = sp.Symbol("q", positive=True)  # p_{n-1} in (0,1)
    one_step = equal(gibbs_pos(q, 1 - q, q), sigma(logit(q) + 1 / beta))
    base = (L + 0 / beta) == L
    x_prev = L + n / beta  # induction hypothesis
    step = equal(x_prev + 1 / beta, L + (n + 1) / beta)
    lim = sp.limit(sigma(L + n / beta), n, sp.oo)
    ok = one_step and base and step and lim == 1
    return Outcome(
        ok,
        "symbolic",
        "one step: logit p_n = logit p_{n-1} + 1/beta (Thm 8, anchor pi_{n-1}); "
        f"induction base n = 0 and step (L + n/beta) + 1/beta = L + (n+1)/beta; limit {lim}",
    )


@register(
    "var.beta_eff",
    "Mean+variance = mean-only with beta_eff = beta sqrt(p(1-p)+eps): same policy "
    "update and same PoS map; a smaller variance gives larger log-odds increments",
    "Sec. 5; Sec. 6",
    SEC,
)
def beta_eff(ctx: Context) -> Outcome:
    s = sp.Symbol("s2", positive=True)  # variance p(1-p)+eps
    b_eff = beta * sp.sqrt(p * (1 - p) + eps)
    policy = equal(w_plus(p, eps) / beta, (1 - p) / b_eff) and equal(
        w_minus(p, eps) / beta, p / b_eff
    )
    pos = equal(omega(p) / beta, 1 / b_eff)
    incr = (-sp.diff(1 / (beta * sp.sqrt(s)), s)).is_positive
    ok = policy and pos and bool(incr)
    return Outcome(
        ok,
        "symbolic",
        "w+-(p)/beta = (Dr. weights)/beta_eff for both rewards, so the Gibbs "
        "policies coincide; Omega/beta = 1/beta_eff; d(1/beta_eff)/d variance < 0",
    )


# ------------------------------------------------------------------------------- two KL terms


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
    z = sum(b * sp.exp(a / beta) for b, a in zip(bar, adv))
    new = [b * sp.exp(a / beta) / z for b, a in zip(bar, adv)]  # Thm 8 with anchor pibar (Lemma 2)
    rhs = (
        alpha * _logit2(pr)
        + (1 - alpha) * _logit2(po)
        + delta_renyi(rs, rf, os_, of)
        + (wp + wm) / beta
    )
    q = sp.Symbol("q", positive=True)
    ok = is_zero(_log_odds(new, PATTERN) - rhs) and equal(
        w_plus(q, eps) + w_minus(q, eps), omega(q)
    )
    return Outcome(
        ok,
        "symbolic",
        "exact optimum of the two-KL objective = Gibbs policy on the anchor pibar "
        "(Lemma 2 + Thm 8) with weights w+, w-; its log-odds minus the Thm 9 right side (with "
        "w+ + w- in place of Omega) cancel; w+(p) + w-(p) = Omega(p)",
    )


def renyi_np(P, Q, a):
    return np.log(np.sum(P**a * Q ** (1 - a))) / (a - 1)


@register(
    "var.two_kl_recurrence_numeric",
    "Thm 9 recurrence at random K, pi_ref, pi_{n-1}, rewards, alpha, "
    "beta, eps (direct computation of pibar and of the Gibbs optimum)",
    "Lemma 2-3; Thm 9",
    SEC,
)
def two_kl_recurrence_numeric(ctx: Context) -> Outcome:
    rng, m = ctx.rng, ctx.n_random
    err = np.empty(m)
    for i in range(m):
        k = int(rng.integers(2, 9))
        rew = np.zeros(k, bool)
        rew[rng.permutation(k)[: int(rng.integers(1, k))]] = True
        ref, old = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
        a, b, e = rng.uniform(0.05, 0.95), 10 ** rng.uniform(-1, 1), 10 ** rng.uniform(-4, 0)
        p_ref, p_old = ref[rew].sum(), old[rew].sum()
        s = np.sqrt(p_old * (1 - p_old) + e)
        adv = np.where(rew, (1 - p_old) / s, -p_old / s)
        logw = a * np.log(ref) + (1 - a) * np.log(old) + adv / b  # log(pibar * e^{A/beta}) + const
        lhs = logsumexp(logw[rew]) - logsumexp(logw[~rew])
        d_r = (1 - a) * (
            renyi_np(ref[~rew] / (1 - p_ref), old[~rew] / (1 - p_old), a)
            - renyi_np(ref[rew] / p_ref, old[rew] / p_old, a)
        )
        rhs = (
            a * np.log(p_ref / (1 - p_ref))
            + (1 - a) * np.log(p_old / (1 - p_old))
            + d_r
            + 1 / (b * s)
        )
        err[i] = abs(lhs - rhs) / max(1.0, abs(rhs))
    return numeric_outcome(err, ctx.tol, "relative error of logit p_n, K in 2..8", m)


@register(
    "var.two_kl_amplification",
    "Two KL: if D_alpha(S) <= D_alpha(F) at every step (Delta_R >= 0), then "
    "logit p_n > logit p_ref for all n >= 1 (amplification)",
    "Thm 9 (App. E)",
    SEC,
)
def two_kl_amplification(ctx: Context) -> Outcome:
    a = _unit("t")  # alpha in (0,1)
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


__all__ = ["gibbs_pos", "renyi_np", "omega"]
