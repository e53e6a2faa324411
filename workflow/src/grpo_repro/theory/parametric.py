"""App. F, Thm 10: parametric GRPO iterations stay close to the exact ones.

Thm 10: if TV(pi~_n, pi_n) <= TV(pi~_{n-1}, pi_{n-1}) + delta_n with sum delta_i -> delta* in
[0, 1) and p_n -> p*, then limsup |p~_n - p*| <= 2 delta*. Checks:
- the event lemma |P(A) - Q(A)| <= TV(P,Q) (so |p~_n - p_n| <= TV_n), symbolically and numerically;
- par.tv_accumulation, derived from the iterates: two Gibbs policies on the same anchor keep its
  conditionals on S and F, so TV(T pi~, T pi) = |h(p~) - h(p)| for the GRPO update T; the triangle
  inequality through T pi~_{n-1} gives TV_n <= delta_n + Lip(h) TV_{n-1} with delta_n the one-step
  error TV(pi~_n, T pi~_{n-1}); for Lip(h) <= 1 this is the assumption, and induction gives
  TV_n <= sum delta_i;
- par.tv_can_expand: an interval-certified case with |h(a) - h(b)| > |a - b|, so the assumption is
  a genuine restriction (it can fail with one-step errors as delta_n);
- par.limsup_conclusion: the chain |p~_n - p*| <= TV_n + |p_n - p*| <= sum delta_i + |p_n - p*|
  gives limsup <= delta* <= 2 delta* (the bound is the sympy limit of the chain, not typed in);
  an exact witness attains delta* (the constant 1 is tight).
What is tested and what holds by construction: the conclusion follows from the assumption by the
chain above for every sequence, so measured on the oracle (dynamics.oracle.compare, figures stage) it holds
wherever the assumption holds; the measured content is how often the assumption holds
(oracle_sgd_thm10.csv), and num.thm10_delta checks that the measurement of delta_n can fail.
"""

from __future__ import annotations

import itertools

import numpy as np
import sympy as sp

from . import gibbs as gb
from . import orbits
from .core import Context, Outcome, equal, iv_of, numeric_outcome, register

SEC = "App. F"


@register(
    "par.event_tv_bound",
    "|P(A) - Q(A)| <= TV(P,Q) = (1/2) sum_o |P(o) - Q(o)| for every event A "
    "(here the success event), hence |p~_n - p_n| <= TV(pi~_n, pi_n) <= 2 TV",
    "Thm 10 (App. F)",
    SEC,
)
def event_tv_bound(ctx: Context, k: int = 4) -> Outcome:
    ps = list(sp.symbols(f"P1:{k}", positive=True))
    qs = list(sp.symbols(f"Q1:{k}", positive=True))
    P, Q = ps + [1 - sum(ps)], qs + [1 - sum(qs)]
    d = [x - y for x, y in zip(P, Q)]
    tv = sum(sp.Abs(x) for x in d) / 2
    for ev in itertools.product((0, 1), repeat=k):
        gap = sum(x for x, e in zip(d, ev) if e)  # P(A) - Q(A)
        for sgn in (1, -1):  # both P(A)-Q(A) and Q(A)-P(A)
            dec = (
                sum((sp.Abs(x) - sgn * x) if e else (sp.Abs(x) + sgn * x) for x, e in zip(d, ev))
                / 2
            )
            if not equal(tv - sgn * gap, dec):
                return Outcome(False, "symbolic", f"decomposition fails for event {ev}")
    t = sp.Symbol("t", nonnegative=True)  # |x| -+ x >= 0: case x = t, x = -t
    signs = all((sp.Abs(x) - s * x).is_nonnegative for x in (t, -t) for s in (1, -1))
    return Outcome(
        signs,
        "symbolic",
        f"K={k}, all {2**k} events: TV -+ (P(A)-Q(A)) = (1/2) sum_A (|d| -+ d) + "
        "(1/2) sum_(A^c) (|d| +- d) using sum d = 0 (identity, Abs kept as atoms); each term >= 0 by the "
        "case split d = t, d = -t (t >= 0)",
    )


@register(
    "par.event_tv_numeric",
    "|P(A) - Q(A)| <= TV(P,Q) at random laws and events; equality at A = {P > Q}",
    "Thm 10 (App. F)",
    SEC,
)
def event_tv_numeric(ctx: Context) -> Outcome:
    rng, n = ctx.rng, ctx.n_random
    err = np.empty(n)
    for i in range(n):
        k = int(rng.integers(2, 11))
        P, Q = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
        tv = 0.5 * np.abs(P - Q).sum()
        ev = rng.integers(0, 2, (16, k)).astype(bool)
        gaps = np.abs((ev * (P - Q)).sum(axis=1))
        attained = (P - Q)[P > Q].sum()
        err[i] = max(np.max(gaps - tv), abs(attained - tv), 0.0)
    return numeric_outcome(
        err, ctx.tol, "max(|P(A)-Q(A)| - TV, |TV - (P-Q)({P>Q})|), K in 2..10, 16 events each", n
    )


def _conditionals_kept(k: int = 4):
    """Gibbs policies on one anchor with a tilt constant on S and on F: pi(o) = P(S) ref(o)/ref(S)
    on S (and P(F) ref(o)/ref(F) on F); returns (ok, TV(pi, pi') - |P(S) - P'(S)| == 0)."""
    ref = list(sp.symbols(f"r1:{k + 1}", positive=True))
    pat = (1, 1, 0, 0)
    a, b, a2, b2 = sp.symbols("a b a2 b2", real=True)
    pi, _ = gb.gibbs(ref, [a if r else -b for r in pat])
    pi2, _ = gb.gibbs(ref, [a2 if r else -b2 for r in pat])
    ref_s = sum(x for x, r in zip(ref, pat) if r)
    ref_f = sum(x for x, r in zip(ref, pat) if not r)
    ps = sum(x for x, r in zip(pi, pat) if r)
    ps2 = sum(x for x, r in zip(pi2, pat) if r)
    kept = all(
        equal(x, (ps if r else 1 - ps) * o / (ref_s if r else ref_f))
        for x, o, r in zip(pi, ref, pat)
    )
    d = sp.Symbol("Delta", real=True)  # P(S) - P'(S)
    diffs = [(d if r else -d) * o / (ref_s if r else ref_f) for o, r in zip(ref, pat)]
    tv = sum(sp.Abs(x) for x in diffs) / 2
    return kept and equal(sp.factor_terms(tv), sp.Abs(d)), ps, ps2


def _induction(lam_max):
    """t_n <= delta_n + L t_{n-1} with L in (0, lam_max], t_{n-1} <= S_{n-1}  =>  t_n <= S_n."""
    s_prev, g, w = sp.symbols("S_prev g w", nonnegative=True)
    lam = lam_max / (1 + w)  # every L in (0, lam_max] (L = 0 is immediate)
    worst = sp.expand(s_prev - lam * (s_prev - g))  # S_n - t_n at t_n = delta_n + L t_{n-1}
    return bool(sp.cancel(sp.together(worst)).is_nonnegative)


@register(
    "par.tv_accumulation",
    "Thm 10's assumption from the actual GRPO iterates: TV(T pi~, T pi) = |h(p~) - h(p)| (same "
    "anchor pi_ref), so TV_n <= delta_n + sup|h'| TV_{n-1} with delta_n = TV(pi~_n, T pi~_{n-1}); "
    "with sup|h'| <= 1, TV_n <= TV_{n-1} + delta_n and TV_n <= sum_{i<=n} delta_i",
    "Thm 10 (App. F)",
    SEC,
)
def tv_accumulation(ctx: Context, lam_max=1) -> Outcome:
    kept, _, _ = _conditionals_kept()
    step = _induction(lam_max)
    return Outcome(
        kept and step,
        "symbolic",
        "K=4 (2 successes, 2 failures), symbolic anchor and tilts: each Gibbs policy equals "
        f"P(S) pi_ref(.|S) on S and P(F) pi_ref(.|F) on F ({kept}), so TV between two of them is "
        "|P(S) - P'(S)| = |h(p~) - h(p)|; triangle inequality through T pi~_{n-1} and the mean "
        "value theorem give t_n <= delta_n + L t_{n-1}; induction step with L in (0, "
        f"{lam_max}]: S_n - t_n = (1-L) S_(n-1) + L g >= 0 {'proven' if step else 'NOT provable'}",
    )


#: beta, p_ref, eps and two PoS values near the unstable fixed point ~0.0086 (h' ~ -1.06)
EXPANSION = dict(
    beta=5,
    p_ref=sp.Rational(1, 1000),
    eps=sp.Rational(1, 10**5),
    a=sp.Rational(8, 1000),
    b=sp.Rational(9, 1000),
)


@register(
    "par.tv_can_expand",
    "Thm 10's assumption is a genuine restriction: the exact GRPO update can expand TV, "
    "TV(T pi~, T pi) = |h(p~) - h(p)| > |p~ - p| = TV(pi~, pi) (beta = 5, p_ref = 1/1000, "
    "eps = 1e-5, p~ = 8/1000, p = 9/1000, pi~ and pi with pi_ref's conditionals)",
    "Thm 10 (App. F)",
    SEC,
)
def tv_can_expand(ctx: Context, case=None) -> Outcome:
    c = EXPANSION if case is None else case
    h, _ = orbits.interval_maps(60)
    prm = (iv_of(c["p_ref"]), iv_of(c["beta"]), iv_of(c["eps"]))
    gap = abs(h(iv_of(c["a"]), *prm) - h(iv_of(c["b"]), *prm))
    base = abs(c["a"] - c["b"])
    ok = gap.a > iv_of(base).b
    return Outcome(
        bool(ok),
        "exact",
        f"interval arithmetic: |h(a) - h(b)| in [{float(gap.a):.6g}, {float(gap.b):.6g}] vs "
        f"|a - b| = {base}: the update expands TV by {float(gap.mid) / float(base):.4f} there, so "
        "with one-step errors as delta_n, TV_n <= TV_{n-1} + delta_n can fail",
    )


def _triangle() -> bool:
    """|x + y| <= |x| + |y| for reals, by the sign cases x = +-s, y = +-t and the order of s, t."""
    s, t, w = sp.symbols("s t w", nonnegative=True)
    for big, small in ((s + w, s), (s, s + w)):
        for x, y in ((big, small), (big, -small), (-big, small), (-big, -small)):
            if not sp.simplify(sp.Abs(x) + sp.Abs(y) - sp.Abs(x + y)).is_nonnegative:
                return False
    return True


@register(
    "par.limsup_conclusion",
    "Thm 10: under the assumption (sum delta_i -> delta* < 1) and p_n -> p*, limsup |p~_n - p*| "
    "<= 2 delta*; in fact <= delta*, and delta* is attained (the tight constant is 1)",
    "Thm 10 (App. F)",
    SEC,
)
def limsup_conclusion(ctx: Context, factor=2) -> Outcome:
    tri = _triangle()
    # chain: |p~_n - p*| <= |p~_n - p_n| + |p_n - p*| <= TV_n + e_n <= S_n + e_n -> delta* + 0
    n = sp.Symbol("n", integer=True, positive=True)
    ds = sp.Symbol("delta_star", positive=True)
    s_n = ds * (1 - sp.Rational(1, 2) ** n)  # witness: delta_n = S_n - S_(n-1) >= 0
    p_star = sp.Rational(1, 3)  # pi_n = (p*, 1-p*) for all n (p_n -> p* trivially)
    p_tilde = p_star + s_n  # pi~_n = (p* + S_n, 1 - p* - S_n): TV_n = S_n, assumption tight
    gap_limit = sp.limit(sp.Abs(p_tilde - p_star), n, sp.oo)  # = limsup (monotone sequence)
    # the chain's bound, derived: the assumption gives TV_n <= S_n (par.tv_accumulation), the
    # event lemma |p~_n - p_n| <= TV_n, and p_n -> p* an error e_n -> 0; the bound is the limit of
    # S_n + e_n for the assumption's partial sums S_n -> delta* (any e_n -> 0, here c r^n)
    c, rate = sp.Symbol("c", positive=True), sp.Symbol("rho", positive=True)
    e_n = c * (rate / (1 + rate)) ** n  # |p_n - p*| -> 0 geometrically (rate/(1+rate) < 1)
    chain_bound = sp.limit(s_n + e_n, n, sp.oo)
    ok = tri and equal(gap_limit, ds) and (factor * ds - chain_bound).is_nonnegative is True
    ok = ok and (factor * ds - gap_limit).is_nonnegative is True
    return Outcome(
        bool(ok),
        "symbolic",
        f"triangle inequality (sign case split: {tri}), event lemma (par.event_tv_bound) and "
        "par.tv_accumulation give |p~_n - p*| <= S_n + |p_n - p*|, whose limit (sympy, S_n = "
        f"delta*(1 - 2^-n), |p_n - p*| = c (rho/(1+rho))^n) is {chain_bound}; the "
        f"exact witness pi_n = (1/3, 2/3), pi~_n = (1/3 + S_n, 2/3 - S_n), S_n = delta*(1 - 2^-n) "
        f"satisfies the assumption with equality and has limsup |p~_n - p*| = {gap_limit}: the "
        f"claimed factor {factor} is {'valid' if ok else 'INVALID'} (any factor >= 1 is)",
    )
