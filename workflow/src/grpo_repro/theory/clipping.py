"""Sec. 2.2-2.3: the weighted contrastive form of GRPO and the clipping identity.

Checks: the unclipped GRPO objective E_{pi_old}[(pi_theta/pi_old) A] equals the weighted
contrastive form w+ P_theta(r=1) - w- P_theta(r=0) (finite outcome space, every reward pattern,
weights of eq. (4) from weights.py); the clipping identity f(x,A) = A min(x,1+c) (A>0),
A max(x,1-c) (A<0) (exhaustive case split and numerically); the clipped (indicator) contrastive
form; the indicator form carries the event mass (corrected first display, docs/theory.md Sec. 1).

Errata of Sec. 2 (docs/theory.md Sec. 1, "Known defects"): literal readings shown wrong, each by an
exact rational counterexample (method `exact`). kind = "erratum": passed = True means the literal
reading of the paper's text was shown to be false, as documented; the corrected statements are
separate `claim` records (listed in `related`):
- the first contrastive display writes a conditional expectation E_{o~pi_old, r=1}[.] that drops
  the event mass p_old (corrected: the indicator form, adv.contrastive_form,
  adv.indicator_vs_conditional, adv.clipped_contrastive_numeric);
- the clipping identity swaps the ratio and advantage symbols (corrected: adv.clip_identity).
"""

from __future__ import annotations

import itertools

import numpy as np
import sympy as sp

from grpo_repro.dynamics import oracle_sgd as sgd

from . import weights as wts
from .core import Context, Outcome, equal, log_uniform, numeric_outcome, register

SEC = "Sec. 2"
eps = wts.eps


# -------------------------------------------------------------------- contrastive form, K outcomes


def finite_policies(k: int):
    """Symbolic pi_old (normalised: last = 1 - sum of the others) and pi_theta on k outcomes."""
    a = list(sp.symbols(f"a1:{k}", positive=True))
    a.append(1 - sum(a))
    b = list(sp.symbols(f"b1:{k + 1}", positive=True))
    return a, b


@register(
    "adv.contrastive_form",
    "Unclipped GRPO objective E_{pi_old}[(pi_theta/pi_old) A] equals "
    "w+(p_old) E_{pi_old}[ratio 1{r=1}] - w-(p_old) E_{pi_old}[ratio 1{r=0}] = "
    "w+ P_theta(r=1) - w- P_theta(r=0)",
    "Sec. 2.2-2.3 (GRPO-No-Clip)",
    SEC,
)
def contrastive_form(ctx: Context, k: int = 4) -> Outcome:
    a, b = finite_policies(k)
    n = 0
    for pattern in itertools.product((0, 1), repeat=k):
        p_old = sum(ai for ai, ri in zip(a, pattern) if ri)
        lhs = sum(
            ai * (bi / ai) * wts.advantage(ri, p_old, eps) for ai, bi, ri in zip(a, b, pattern)
        )
        ind_s = sum(ai * (bi / ai) for ai, bi, ri in zip(a, b, pattern) if ri)
        ind_f = sum(ai * (bi / ai) for ai, bi, ri in zip(a, b, pattern) if not ri)
        mid = wts.w_plus(p_old, eps) * ind_s - wts.w_minus(p_old, eps) * ind_f
        pt_s = sum(bi for bi, ri in zip(b, pattern) if ri)
        pt_f = sum(bi for bi, ri in zip(b, pattern) if not ri)
        rhs = wts.w_plus(p_old, eps) * pt_s - wts.w_minus(p_old, eps) * pt_f
        if not (equal(lhs, mid) and equal(mid, rhs)):
            return Outcome(False, "symbolic", f"identity fails for reward pattern {pattern}")
        n += 1
    return Outcome(
        True,
        "symbolic",
        f"K={k} outcomes, symbolic pi_old (normalised), pi_theta, eps; "
        f"all {n} reward patterns: both sides expand to the same expression",
    )


# -------------------------------------------------------------------- clipping identity


def _pick(d):
    """Sign of d (to decide min/max) from the assumptions; raises if undecidable."""
    d = sp.cancel(sp.together(d))
    if d.is_nonpositive or sp.factor(d).is_nonpositive:
        return -1
    if d.is_nonnegative or sp.factor(d).is_nonnegative:
        return 1
    raise ValueError(f"cannot decide the sign of {d}")


def smin(u, v):
    return u if _pick(u - v) < 0 else v


def smax(u, v):
    return v if _pick(u - v) < 0 else u


def sclip(x, lo, hi):
    return smin(smax(x, lo), hi)


def f_clip(x, adv, c):
    """PPO/GRPO clipped surrogate f(x, A) = min(x A, clip(x, 1-c, 1+c) A)."""
    return smin(x * adv, sclip(x, 1 - c, 1 + c) * adv)


def clip_regions(c):
    """The three ratio regions x <= 1-c, 1-c <= x < 1+c, x >= 1+c, each parametrised by a
    non-negative symbol (exhaustive over the real line)."""
    t = sp.Symbol("t", nonnegative=True)
    u = sp.Symbol("u", nonnegative=True)
    return {
        "x <= 1-c": 1 - c - t,
        "1-c <= x < 1+c": 1 - c + 2 * c * u / (1 + u),
        "x >= 1+c": 1 + c + t,
    }


@register(
    "adv.clip_identity",
    "min(x A, clip(x,1-c,1+c) A) = A min(x,1+c) if A > 0 and "
    "A max(x,1-c) if A < 0 (x = pi_theta/pi_old, A = advantage)",
    "Sec. 2.2",
    SEC,
)
def clip_identity(ctx: Context, claimed=None) -> Outcome:
    c = sp.Symbol("c", positive=True)
    a = sp.Symbol("alpha_adv", positive=True)
    if claimed is None:

        def claimed(x, adv, sign):
            return adv * (smin(x, 1 + c) if sign > 0 else smax(x, 1 - c))

    cases = 0
    for name, x in clip_regions(c).items():
        for sign in (1, -1):
            adv = sign * a
            if not equal(f_clip(x, adv, c), claimed(x, adv, sign)):
                return Outcome(False, "symbolic", f"fails in region {name} with sign(A) = {sign}")
            cases += 1
    return Outcome(
        True,
        "symbolic",
        f"exhaustive case split: {cases} cases (3 ratio regions x sign of A, "
        "each min/max decided from the assumptions c > 0, |A| > 0), both sides equal in each",
    )


@register(
    "adv.clip_identity_numeric",
    "dynamics.oracle_sgd.clipped_objective (the oracle's clipped surrogate) satisfies the "
    "clipping identity of Sec. 2.2 at random (ratio, advantage, clip_eps)",
    "Sec. 2.2",
    SEC,
)
def clip_identity_numeric(ctx: Context) -> Outcome:
    n, rng = ctx.n_random, ctx.rng
    x = log_uniform(rng, 1e-2, 1e2, n)
    adv = rng.normal(0, 3, n)
    c = rng.uniform(0.01, 0.9, n)
    rhs = np.where(adv > 0, adv * np.minimum(x, 1 + c), adv * np.maximum(x, 1 - c))
    err = np.abs(sgd.clipped_objective(x, adv, c) - rhs) / np.maximum(1, np.abs(rhs))
    return numeric_outcome(err, ctx.tol, "relative error of the identity", n)


@register(
    "adv.clipped_contrastive_numeric",
    "Clipped GRPO objective E_{pi_old} f(ratio, A) = "
    "w+ E_{pi_old}[min(ratio,1+c) 1{r=1}] - w- E_{pi_old}[max(ratio,1-c) 1{r=0}] (indicator form)",
    "Sec. 2.2-2.3 (GRPO-Clip)",
    SEC,
)
def clipped_contrastive_numeric(ctx: Context) -> Outcome:
    rng, n = ctx.rng, ctx.n_random
    errs = np.empty(n)
    for i in range(n):
        k = int(rng.integers(2, 9))
        old = rng.dirichlet(np.ones(k))
        new = rng.dirichlet(np.ones(k))
        rew = rng.integers(0, 2, k)
        c = rng.uniform(0.01, 0.5)
        e = 10 ** rng.uniform(-6, 0)
        pp = old[rew == 1].sum()
        s = np.sqrt(pp * (1 - pp) + e)
        ratio = new / old
        lhs = np.sum(old * sgd.clipped_objective(ratio, (rew - pp) / s, c))
        rhs = (1 - pp) / s * np.sum(old * np.minimum(ratio, 1 + c) * (rew == 1)) - pp / s * np.sum(
            old * np.maximum(ratio, 1 - c) * (rew == 0)
        )
        errs[i] = abs(lhs - rhs) / max(1.0, abs(rhs))
    return numeric_outcome(
        errs,
        ctx.tol,
        "relative error, random K in 2..8, pi_old, pi_theta, rewards, clip_eps, eps",
        n,
    )


@register(
    "adv.indicator_vs_conditional",
    "Corrected first display: E[X 1{r=1}] = P(r=1) E[X | r=1], so "
    "the exact (indicator) contrastive form carries the event mass p_old (resp. 1-p_old)",
    "Sec. 2.2 (corrected, docs/theory.md Sec. 1)",
    SEC,
)
def indicator_vs_conditional(ctx: Context, k: int = 4) -> Outcome:
    a, b = finite_policies(k)
    for pattern in itertools.product((0, 1), repeat=k):
        if 0 < sum(pattern) < k:
            p_s = sum(ai for ai, ri in zip(a, pattern) if ri)
            ind = sum(ai * (bi / ai) for ai, bi, ri in zip(a, b, pattern) if ri)
            cond = sum((ai / p_s) * (bi / ai) for ai, bi, ri in zip(a, b, pattern) if ri)
            if not equal(ind, p_s * cond):
                return Outcome(False, "symbolic", f"fails for pattern {pattern}")
    return Outcome(
        True,
        "symbolic",
        f"K={k}, every non-trivial reward pattern: sum_S a_i (b_i/a_i) = "
        "p_old * sum_S (a_i/p_old)(b_i/a_i) (conditional law a_i/p_old on the success event)",
    )


R = sp.Rational


def _example():
    """Two outcomes (success, failure): pi_old = (1/4, 3/4), pi_theta = (1/2, 1/2), eps = 1/16 so that
    p_old(1-p_old) + eps = 1/4 and w+ = 3/2, w- = 1/2 exactly."""
    p_old, eps = R(1, 4), R(1, 16)
    old, new = (p_old, 1 - p_old), (R(1, 2), R(1, 2))
    s = sp.sqrt(p_old * (1 - p_old) + eps)
    return old, new, (1 - p_old) / s, p_old / s


@register(
    "err.conditional_display",
    "Literal first display: w+ E_{pi_old}[min(ratio,1+c) | r=1] - "
    "w- E_{pi_old}[max(ratio,1-c) | r=0] (conditional expectations, no event mass) equals the GRPO "
    "objective",
    "Sec. 2.2, first contrastive display",
    SEC,
    kind="erratum",
    related=(
        "adv.contrastive_form",
        "adv.indicator_vs_conditional",
        "adv.clipped_contrastive_numeric",
    ),
)
def conditional_display(ctx: Context) -> Outcome:
    old, new, wp, wm = _example()
    c = R(1, 5)
    ratio = [b / a for a, b in zip(old, new)]
    exact = old[0] * f_clip(ratio[0], wp, c) + old[1] * f_clip(ratio[1], -wm, c)
    indicator = wp * old[0] * smin(ratio[0], 1 + c) - wm * old[1] * smax(ratio[1], 1 - c)
    literal = wp * smin(ratio[0], 1 + c) - wm * smax(
        ratio[1], 1 - c
    )  # E[. | r] on one-point events
    un_exact = wp * new[0] - wm * new[1]
    un_literal = wp * new[0] / old[0] - wm * new[1] / old[1]
    shown = sp.nsimplify(exact - indicator) == 0 and exact != literal and un_exact != un_literal
    return Outcome(
        shown,
        "exact",
        "the literal conditional reading is WRONG, as documented: exact "
        f"counterexample pi_old = (1/4, 3/4), pi_theta = (1/2, 1/2), eps = 1/16, clip_eps = 1/5: "
        f"objective E_old f(ratio, A) = {exact} = indicator form {indicator}, but the conditional "
        f"display gives {literal}; without clipping {un_exact} vs {un_literal}. The two terms "
        "are rescaled by 1/p_old and 1/(1-p_old), so the literal objective is not even a multiple "
        "of the true one",
    )


@register(
    "err.swapped_clip_symbols",
    "Literal clipping identity with the ratio x and the advantage y swapped: "
    "f(x,y) = x min(y, 1+c) if x > 0 (x max(y, 1-c) if x < 0)",
    "Sec. 2.2, clipping identity",
    SEC,
    kind="erratum",
    related=("adv.clip_identity", "adv.clip_identity_numeric"),
)
def swapped_clip_symbols(ctx: Context) -> Outcome:
    x, y, c = R(2), R(1), R(1, 5)
    true = f_clip(x, y, c)
    swapped = x * (smin(y, 1 + c) if x > 0 else smax(y, 1 - c))
    corrected = y * (smin(x, 1 + c) if y > 0 else smax(x, 1 - c))
    rng, n = ctx.rng, ctx.n_random
    xs, ys, cs = np.exp(rng.uniform(-3, 3, n)), rng.normal(0, 2, n), rng.uniform(0.05, 0.5, n)
    fv = np.minimum(xs * ys, np.clip(xs, 1 - cs, 1 + cs) * ys)
    sw = xs * np.minimum(ys, 1 + cs)  # ratios are > 0
    frac = float(np.mean(np.abs(fv - sw) > ctx.tol * np.maximum(1, np.abs(fv))))
    shown = swapped != true and corrected == true
    return Outcome(
        shown,
        "exact",
        "the literal (swapped) reading is WRONG, as documented: exact counterexample "
        f"ratio x = 2, advantage y = 1, clip_eps = 1/5: f = min(xy, clip(x) y) = {true}, swapped "
        f"x min(y, 1+c) = {swapped}, corrected y min(x, 1+c) = {corrected}; the swapped form also "
        f"fails at {frac:.0%} of {n} random points",
    )
