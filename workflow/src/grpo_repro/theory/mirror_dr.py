"""Sec. 4-5 / App. D: Mirror GRPO (Thm 4-5), Dr. GRPO and Mirror Dr. GRPO (Sec. 5), and the
mean+variance = mean-only with beta_eff equivalence (Sec. 5-6).

Every one-step PoS map here is derived, not restated: `pos_step(variant, p_prev, p_ref)` is the
Thm 8 PoS `gibbs.gibbs_pos` of the variant's anchor (`anchor_pos`: pi_ref for grpo / dr_grpo,
pi_{n-1} for mirror / mirror_dr) with the variant's weights at p_{n-1} (eq. (4), or the
mean-only weights of weights.dr_weights). The recurrences are proven from that map (odds ratio,
then induction), so a wrong anchor or weight makes them fail. The two-KL variants are in two_kl.py.
"""

from __future__ import annotations

import sympy as sp

from . import gibbs as gb
from . import weights as wts
from .core import Context, Outcome, equal, is_zero, logit, positive, register, sigma, unit

SEC = "Sec. 4-5 / App. D"
p = sp.Symbol("p", positive=True)
eps = sp.Symbol("eps", positive=True)
beta = sp.Symbol("beta", positive=True)
L = sp.Symbol("L", real=True)  # logit p_ref
n = sp.Symbol("n", integer=True, nonnegative=True)
PREF = sp.Symbol("p_ref", positive=True)
#: the paper's mean-only variants (Dr. GRPO, Sec. 5), as the theory names them: its checks hold the
#: library's variant records to these, never read them
MEAN_ONLY = ("dr_grpo", "mirror_dr", "two_kl_dr")


def anchor_pos(variant: str, p_prev, p_ref):
    """PoS of the KL anchor of step n: pi_ref (grpo, dr_grpo: Thm 1) or pi_{n-1} (mirror,
    mirror_dr: Thm 4)."""
    if variant in ("grpo", "dr_grpo"):
        return p_ref
    if variant in ("mirror", "mirror_dr"):
        return p_prev
    raise ValueError(f"unknown one-anchor variant {variant!r}")


def step_weights(variant: str, pp, e=eps):
    """(w+, w-) at p_{n-1}: eq. (4) or mean-only (Dr. GRPO)."""
    if variant in MEAN_ONLY:
        return wts.dr_weights(pp)
    return wts.w_plus(pp, e), wts.w_minus(pp, e)


def pos_step(variant: str, p_prev, p_ref=PREF, e=eps, b=beta):
    """p_n as a function of p_{n-1}: Thm 8 PoS with the variant's anchor and weights."""
    wp, wm = step_weights(variant, p_prev, e)
    return gb.gibbs_pos(anchor_pos(variant, p_prev, p_ref), wp, wm, b)


def log_odds_increment(variant: str, q, base=None):
    """logit p_n - logit(base) from the derived map (the two exponentials merged), p_{n-1} = q;
    base defaults to the anchor's PoS."""
    pn = pos_step(variant, q)
    po = anchor_pos(variant, q, PREF) if base is None else base
    ratio = sp.powsimp(sp.cancel(sp.together(pn / (1 - pn) / (po / (1 - po)))), combine="exp")
    return sp.expand(sp.expand_log(sp.log(ratio), force=True))


# ------------------------------------------------------------------------------- Mirror GRPO


@register(
    "var.mirror_recurrence",
    "Mirror GRPO (anchor pi_{n-1}): logit p_n = logit p_{n-1} + Omega(p_{n-1})/beta",
    "Thm 4; Thm 5 (App. D)",
    SEC,
)
def mirror_recurrence(ctx: Context) -> Outcome:
    ok = equal(pos_step("mirror", p), sigma(logit(p) + wts.omega(p, eps) / beta))
    return Outcome(
        ok,
        "symbolic",
        "Thm 8 PoS (gibbs_pos) with the anchor of mirror (pi_{n-1}) and weights w+-(p_{n-1}) "
        "equals sigma(logit p_{n-1} + Omega(p_{n-1})/beta) (exp split, cancel)",
    )


@register(
    "var.mirror_increasing",
    "Mirror GRPO is strictly increasing for interior p (p_n > p_{n-1}) and has "
    "no interior fixed point; 0 and 1 are its fixed points (p_ref = 0 absorbing)",
    "Thm 5 (App. D)",
    SEC,
)
def mirror_increasing(ctx: Context) -> Outcome:
    q = unit("u")  # p_{n-1} in (0,1)
    wp, wm = sp.symbols("W_p W_m", positive=True)  # w+-(p_{n-1}) > 0 (adv.w_* checks)
    y, d = sp.symbols("Y d", positive=True)
    pn = gb.gibbs_pos(anchor_pos("mirror", q, PREF), wp, wm)
    # name the exponentials: e^{-w-/beta} = Y, e^{w+/beta} = Y (1 + d) > Y since w+ + w- > 0
    named = pn.xreplace({sp.exp(wp / beta): y * (1 + d), sp.exp(-wm / beta): y})
    inc = positive(sp.cancel(named - q))
    x = sp.Symbol("X", positive=True)
    g8 = gb.gibbs_pos(anchor_pos("mirror", p, PREF), wp, wm).xreplace({sp.exp(wp / beta): x})
    ends = g8.subs(p, 0) == 0 and sp.cancel(g8.subs(p, 1)) == 1
    return Outcome(
        inc and ends,
        "symbolic",
        f"derived map with anchor PoS p_{{n-1}} = u/(1+u): p_n - p_{{n-1}} = "
        f"{sp.factor(sp.cancel(named - q))} > 0 (e^(w+/beta) = Y(1+d) > Y = e^(-w-/beta)), so "
        "no interior fixed point; the map sends 0 to 0 and 1 to 1",
    )


@register(
    "var.mirror_converges",
    "Mirror GRPO: p_n -> 1 for p_ref in (0,1), since Omega(p) >= 2/sqrt(1+4eps) "
    "gives logit p_n >= logit p_ref + 2n/(beta sqrt(1+4eps))",
    "Thm 5 (App. D)",
    SEC,
)
def mirror_converges(ctx: Context) -> Outcome:
    incr = log_odds_increment("mirror", p, base=p)  # logit p_n - logit p_{n-1}, derived
    ok_incr = equal(incr, wts.omega(p, eps) / beta)
    gap = sp.Rational(1, 4) + eps - (p * (1 - p) + eps)
    square = equal(gap, (p - sp.Rational(1, 2)) ** 2)  # p(1-p)+eps <= 1/4 + eps
    m = 2 / (beta * sp.sqrt(1 + 4 * eps))
    ok_m = equal(m, 1 / (beta * sp.sqrt(sp.Rational(1, 4) + eps)))
    # increment >= m: with s1 = sqrt(1/4+eps) >= s2 = sqrt(p(1-p)+eps) > 0,
    # incr - m = (s1 - s2)/(beta s1 s2) = (s1^2 - s2^2)/(beta s1 s2 (s1 + s2)), s1^2 - s2^2 = gap
    s1, s2, g = sp.symbols("s1 s2 gap", positive=True)
    slack = (1 / (beta * s2) - 1 / (beta * s1)).subs(s1, sp.sqrt(s2**2 + g))
    slack_form = g / (beta * s2 * sp.sqrt(s2**2 + g) * (s2 + sp.sqrt(s2**2 + g)))
    ok_slack = equal(slack, slack_form) and slack_form.is_nonnegative
    ok_slack = ok_slack and equal(incr - m, slack.subs({s2: sp.sqrt(p * (1 - p) + eps), g: gap}))
    # induction: x_{n-1} >= L + (n-1) m (g_prev >= 0) and the derived increment = m + slack
    g_prev = sp.Symbol("g_prev", nonnegative=True)
    x_next = (L + (n - 1) * m + g_prev) + (m + slack_form)
    step = sp.expand(x_next - (L + n * m)).is_nonnegative
    lim = sp.limit(sigma(L + n * m), n, sp.oo)
    ok = ok_incr and square and ok_m and bool(ok_slack) and bool(step) and lim == 1
    return Outcome(
        ok,
        "symbolic",
        "derived increment logit p_n - logit p_{n-1} = Omega(p_{n-1})/beta; 1/4 + eps - "
        "(p(1-p)+eps) = (p-1/2)^2 >= 0, and increment - m = gap/(beta s2 s1 (s1+s2)) >= 0 "
        f"(s1 = sqrt(1/4+eps), s2 = sqrt(p(1-p)+eps); proven: {bool(ok_slack)}) with m = "
        "2/(beta sqrt(1+4eps)); "
        f"induction x_n >= L + n m; lim sigma(L + n m) = {lim}",
    )


# ------------------------------------------------------------------------------- Dr. GRPO


@register(
    "var.dr_grpo_one_step",
    "Dr. GRPO: logit p_n = logit p_ref + 1/beta; the fixed point "
    "sigma(logit p_ref + 1/beta) is reached in one step and kept",
    "Sec. 5",
    SEC,
)
def dr_grpo_one_step(ctx: Context) -> Outcome:
    g = pos_step("dr_grpo", p)  # anchor pi_ref, mean-only weights at p = p_{n-1}
    star = sigma(logit(PREF) + 1 / beta)
    const = equal(sp.diff(g, p), 0) or is_zero(sp.diff(g, p))
    ok = const and equal(g, star) and equal(g.subs(p, star), star)
    return Outcome(
        ok,
        "symbolic",
        "Thm 8 PoS with anchor pi_ref and the Dr. weights (1-p, p) equals "
        "sigma(logit p_ref + 1/beta) for every p (d/dp = 0): p_1 = p*, and p_n = p* for all n >= 1",
    )


@register(
    "var.mirror_dr_arithmetic",
    "Mirror Dr. GRPO: logit p_n = logit p_ref + n/beta (arithmetic progression), p_n -> 1",
    "Sec. 5",
    SEC,
)
def mirror_dr_arithmetic(ctx: Context, claimed=None) -> Outcome:
    claimed = (lambda k: L + k / beta) if claimed is None else claimed
    q = sp.Symbol("q", positive=True)  # p_{n-1} in (0,1)
    incr = log_odds_increment("mirror_dr", q, base=q)  # T(x) - x of the derived map
    const = is_zero(sp.diff(incr, q))  # the derived step is a translation x -> x + c
    base = is_zero(claimed(0) - L)  # p_0 = p_ref
    step = is_zero(claimed(n + 1) - claimed(n) - incr)  # x_n = claimed(n) => x_{n+1} = claimed(n+1)
    lim = sp.limit(sigma(claimed(n)), n, sp.oo)
    ok = const and base and step and lim == 1
    return Outcome(
        ok,
        "symbolic",
        f"derived one-step map (Thm 8, anchor pi_{{n-1}}, weights (1-p, p)): logit p_n - "
        f"logit p_{{n-1}} = {incr} for every p_{{n-1}}; induction from that map: base claimed(0) = "
        f"logit p_ref {'holds' if base else 'FAILS'}, step claimed(n+1) - claimed(n) = increment "
        f"{'holds' if step else 'FAILS'}; limit {lim}",
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
    dp, dm = wts.dr_weights(p)
    policy = equal(wts.w_plus(p, eps) / beta, dp / b_eff) and equal(
        wts.w_minus(p, eps) / beta, dm / b_eff
    )
    pos = equal(pos_step("grpo", p), gb.gibbs_pos(PREF, dp, dm, b_eff))
    incr = (-sp.diff(1 / (beta * sp.sqrt(s)), s)).is_positive
    ok = policy and pos and bool(incr)
    return Outcome(
        ok,
        "symbolic",
        "w+-(p)/beta = (Dr. weights)/beta_eff for both rewards, so the Gibbs "
        "policies coincide and so do the PoS maps (gibbs_pos with beta vs beta_eff); "
        "d(1/beta_eff)/d variance < 0",
    )
