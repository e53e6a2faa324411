"""App. F, Thm 10: parametric GRPO iterations stay close to the exact ones.

Checks the step behind Thm 10: for the success event A, |P(A) - Q(A)| <= TV(P,Q) with
TV = (1/2) sum |P - Q| (so |p~_n - p_n| <= TV(pi~_n, pi_n), and a fortiori <= 2 TV as stated),
symbolically (every event of a 4-outcome space, by an exact decomposition and a sign case split)
and numerically (random laws and events; the bound is attained at A = {P > Q}); and the
accumulation TV(pi~_n, pi_n) <= sum_{i<=n} delta_i from the assumption (induction step).
"""

from __future__ import annotations

import itertools

import numpy as np
import sympy as sp

from .core import Context, Outcome, equal, numeric_outcome, register

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


@register(
    "par.tv_accumulation",
    "TV(pi~_n, pi_n) <= TV(pi~_{n-1}, pi_{n-1}) + delta_n with TV_0 = 0 gives "
    "TV_n <= sum_{i<=n} delta_i (-> delta*), so limsup |p~_n - p*| <= delta* (<= 2 delta*) if p_n -> p*",
    "Thm 10 (App. F)",
    SEC,
)
def tv_accumulation(ctx: Context) -> Outcome:
    s_prev, delta = sp.symbols("S_prev delta_n", nonnegative=True)
    g, h = sp.symbols("g h", nonnegative=True)  # slacks of hypothesis and assumption
    tv_prev = s_prev - g  # TV_{n-1} <= S_{n-1}
    tv_n = tv_prev + delta - h  # TV_n <= TV_{n-1} + delta_n
    step = sp.expand((s_prev + delta) - tv_n).is_nonnegative
    return Outcome(
        bool(step),
        "symbolic",
        "induction step S_n - TV_n = g + h >= 0 (base TV_0 = 0); then, by the "
        "triangle inequality and par.event_tv_bound, |p~_n - p*| <= TV_n + |p_n - p*| -> limsup <= delta*",
    )
