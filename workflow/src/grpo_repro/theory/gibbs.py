"""Thm 1 and Thm 8 (App. B/D): the closed-form optimal policy and its probability of success.

The one derivation every PoS map of the package follows from: `gibbs` (the K-outcome optimal
policy pi_o exp(A/beta)/Z), `gibbs_pos` (its PoS in two-event form, p_o e^{w+/b} / Z, proven equal
to the K-outcome sum by gibbs.pos_logit), and `h_derived(p, p_ref) = gibbs_pos(p_ref, w+(p), w-(p))`
(Thm 1 -> Thm 2), to which recurrence.h_of_r, the numeric dynamics.maps.h and the variants' maps
are tied. Checks: the Gibbs policy pi = pi_o exp(A/beta)/Z is a stationary point of the Lagrangian of
max_pi E_pi[A] - beta KL(pi||pi_o) on the simplex; the objective's Hessian is negative definite
(strict concavity, so the stationary point is the unique maximiser); the exact certificate
J(pi) = beta log Z - beta KL(pi||pi_gibbs) on the simplex; a numeric check against random
policies; Z = p_o e^{w+/beta} + (1-p_o) e^{-w-/beta} and logit p_n = logit p_o + Omega/beta
(Thm 8, any weights w+, w-); with the weights of eq. (4) and anchor pi_ref this is the GRPO map
h (Thm 1 -> Thm 2), whose two written forms agree.
"""

from __future__ import annotations

import itertools

import numpy as np
import sympy as sp

from . import weights as wts
from .core import Context, Outcome, equal, logit, numeric_outcome, register, sigma

SEC = "Sec. 2.4-3 / App. B"
K = 4
beta = sp.Symbol("beta", positive=True)


def _symbols():
    pio = sp.symbols(f"o1:{K + 1}", positive=True)  # anchor pi_o
    adv = sp.symbols(f"A1:{K + 1}", real=True)  # advantages A(o)
    pis = sp.symbols(f"pi1:{K + 1}", positive=True)  # a policy pi
    return pio, adv, pis


def gibbs(pio, adv, b=beta):
    z = sum(o * sp.exp(a / b) for o, a in zip(pio, adv))
    return [o * sp.exp(a / b) / z for o, a in zip(pio, adv)], z


def gibbs_pos(po, wp, wm, b=None):
    """Thm 8 PoS, two-event form: p_o e^{w+/b} / (p_o e^{w+/b} + (1-p_o) e^{-w-/b})."""
    b = beta if b is None else b
    return po * sp.exp(wp / b) / (po * sp.exp(wp / b) + (1 - po) * sp.exp(-wm / b))


def h_derived(pp, p_ref, b=None, e=None):
    """Thm 1 -> Thm 2: the GRPO PoS map, the PoS of the Gibbs policy on pi_ref with the eq. (4)
    weights taken at p: gibbs_pos(p_ref, w+(p), w-(p))."""
    e = sp.Symbol("eps", positive=True) if e is None else e
    return gibbs_pos(p_ref, wts.w_plus(pp, e), wts.w_minus(pp, e), b)


def objective(pi, pio, adv, b=beta):
    """J(pi) = E_pi[A] - beta KL(pi || pi_o)."""
    return sum(x * a for x, a in zip(pi, adv)) - b * sum(x * sp.log(x / o) for x, o in zip(pi, pio))


def _logs(e):
    return sp.expand(sp.expand_log(e, force=True))


@register(
    "gibbs.stationarity",
    "pi_o exp(A/beta)/Z is a stationary point of the Lagrangian of "
    "max E_pi[A] - beta KL(pi||pi_o) subject to sum pi = 1",
    "Thm 1; Thm 8",
    SEC,
)
def stationarity(ctx: Context) -> Outcome:
    pio, adv, pis = _symbols()
    lam = sp.Symbol("lambda")
    lagr = objective(pis, pio, adv) + lam * (sum(pis) - 1)
    star, z = gibbs(pio, adv)
    grads = [_logs(sp.diff(lagr, x).subs(dict(zip(pis, star)))) for x in pis]
    lam_star = sp.solve(grads[0], lam)
    ok = (
        len(lam_star) == 1
        and all(sp.expand(g.subs(lam, lam_star[0])) == 0 for g in grads)
        and equal(sum(star), 1)
    )
    return Outcome(
        ok,
        "symbolic",
        f"K={K}: with lambda = beta(1 - log Z) every partial derivative of the "
        "Lagrangian vanishes at the Gibbs policy (logs expanded), which sums to 1",
    )


@register(
    "gibbs.concavity",
    "The objective is strictly concave on the open simplex: Hessian "
    "diag(-beta/pi_i) is negative definite, so the stationary point is the unique maximiser",
    "Thm 1; Thm 8 (second-order condition)",
    SEC,
)
def concavity(ctx: Context) -> Outcome:
    pio, adv, pis = _symbols()
    hess = sp.hessian(objective(pis, pio, adv), pis)
    diag_ok = all(hess[i, j] == 0 for i in range(K) for j in range(K) if i != j)
    neg_ok = all(equal(hess[i, i], -beta / pis[i]) and hess[i, i].is_negative for i in range(K))
    return Outcome(
        diag_ok and neg_ok,
        "symbolic",
        f"K={K}: Hessian is diagonal with entries -beta/pi_i < 0 "
        "(pi_i > 0, beta > 0): negative definite on R^K, hence on the tangent space of the simplex",
    )


@register(
    "gibbs.variational_identity",
    "On the simplex E_pi[A] - beta KL(pi||pi_o) = beta log Z - "
    "beta KL(pi||pi_gibbs) (global optimality certificate; optimum value beta log Z)",
    "Thm 1; Thm 8 (Donsker-Varadhan form)",
    SEC,
)
def variational_identity(ctx: Context) -> Outcome:
    pio, adv, pis = _symbols()
    pi = list(pis[:-1]) + [1 - sum(pis[:-1])]  # on the simplex
    star, z = gibbs(pio, adv)
    zs = sp.Symbol("Z", positive=True)
    star = [s.subs(z, zs) for s in star]
    kl = sum(x * sp.log(x / s) for x, s in zip(pi, star))
    diff = objective(pi, pio, adv) - beta * sp.log(zs) + beta * kl
    ok = _logs(diff) == 0
    return Outcome(
        ok,
        "symbolic",
        f"K={K}, pi on the simplex: J(pi) - beta log Z + beta KL(pi||pi_gibbs) "
        "expands (logs expanded) to 0; KL >= 0 with equality iff pi = pi_gibbs",
    )


@register(
    "gibbs.optimal_numeric",
    "The Gibbs policy beats random policies: J(pi_gibbs) = beta log Z >= J(pi)",
    "Thm 1; Thm 8",
    SEC,
)
def optimal_numeric(ctx: Context) -> Outcome:
    rng, n = ctx.rng, ctx.n_random
    viol = np.empty(n)
    for i in range(n):
        k = int(rng.integers(2, 9))
        pio = rng.dirichlet(np.ones(k))
        adv = rng.normal(0, 2, k)
        b = 10 ** rng.uniform(-1.5, 1)
        z = np.sum(pio * np.exp(adv / b))
        star = pio * np.exp(adv / b) / z
        others = np.vstack([rng.dirichlet(np.ones(k), 4), star * (1 + 1e-3 * rng.normal(size=k))])
        others /= others.sum(axis=1, keepdims=True)

        def j(pi):
            return pi @ adv - b * np.sum(pi * np.log(pi / pio))

        best = b * np.log(z)
        viol[i] = max(abs(j(star) - best), max(j(o) - best for o in others), 0.0) / max(
            1.0, abs(best)
        )
    return numeric_outcome(
        viol,
        ctx.tol,
        "max(|J(gibbs) - beta log Z|, J(random pi) - beta log Z), "
        "relative; K in 2..8, 5 competitors each",
        n,
    )


def _pos_check(wp, wm):
    """For every non-trivial reward pattern: Z = p_o X + (1-p_o) Y, the K-outcome PoS equals
    gibbs_pos(p_o, wp, wm) and the odds p_n/(1-p_n) = p_o/(1-p_o) * X/Y, with X = e^{wp/beta},
    Y = e^{-wm/beta} (exact rational arithmetic after naming the two exponentials) and a
    normalised symbolic anchor; then X/Y = e^{(wp+wm)/beta}."""
    o = list(sp.symbols(f"o1:{K}", positive=True))
    o.append(1 - sum(o))
    x, y = sp.symbols("X Y", positive=True)
    names = {sp.exp(wp / beta): x, sp.exp(-wm / beta): y}
    n = 0
    for pat in itertools.product((0, 1), repeat=K):
        if not 0 < sum(pat) < K:
            continue
        star, z = gibbs(o, [wp if r else -wm for r in pat])
        star, z = [s.xreplace(names) for s in star], z.xreplace(names)
        po = sum(v for v, r in zip(o, pat) if r)
        pn = sum(v for v, r in zip(star, pat) if r)
        if not equal(z, po * x + (1 - po) * y):
            return False, f"Z fails for pattern {pat}"
        if sp.cancel(pn - gibbs_pos(po, wp, wm).xreplace(names)) != 0:
            return False, f"two-event form gibbs_pos fails for pattern {pat}"
        if sp.cancel(pn / (1 - pn) - po / (1 - po) * x / y) != 0:
            return False, f"PoS odds fail for pattern {pat}"
        n += 1
    if not equal(sp.exp(wp / beta) / sp.exp(-wm / beta), sp.exp((wp + wm) / beta)):
        return False, "X/Y != exp((w+ + w-)/beta)"
    return True, f"{n} reward patterns"


@register(
    "gibbs.pos_logit",
    "Thm 8: Z = p_o e^{w+/beta} + (1-p_o) e^{-w-/beta} and "
    "logit p_n = logit p_o + (w+ + w-)/beta for any weights w+, w- > 0",
    "Thm 8 (App. D)",
    SEC,
)
def pos_logit(ctx: Context) -> Outcome:
    wp, wm = sp.symbols("w_p w_m", positive=True)
    ok, how = _pos_check(wp, wm)
    return Outcome(
        ok,
        "symbolic",
        f"K={K}, normalised symbolic anchor, symbolic weights; {how}: Z and the "
        "odds p_n/(1-p_n) reduce to the stated forms (exp of a sum split, then cancel)",
    )


@register(
    "gibbs.grpo_map",
    "Thm 1 -> Thm 2: with anchor pi_ref and the eq. (4) weights at p, the new "
    "PoS is h(p) = sigma(logit p_ref + 1/(beta sqrt(p(1-p)+eps)))",
    "Thm 1; Thm 2",
    SEC,
)
def grpo_map(ctx: Context) -> Outcome:
    p, eps, pr = sp.symbols("p eps p_ref", positive=True)
    ok, how = _pos_check(wts.w_plus(p, eps), wts.w_minus(p, eps))
    h = h_derived(p, pr, beta, eps)
    ok = (
        ok
        and equal(h, gibbs_pos(pr, wts.w_plus(p, eps), wts.w_minus(p, eps)))
        and equal(wts.w_plus(p, eps) + wts.w_minus(p, eps), wts.omega(p, eps))
        and equal(wts.omega(p, eps), 1 / sp.sqrt(p * (1 - p) + eps))
        and equal(h, sigma(logit(pr) + 1 / (beta * sp.sqrt(p * (1 - p) + eps))))
    )
    return Outcome(
        ok,
        "symbolic",
        f"K={K}, weights w+(p), w-(p) of eq. (4); {how}: h_derived(p) = gibbs_pos(p_ref, w+(p), "
        "w-(p)) has odds p_ref/(1-p_ref) exp((w+ + w-)/beta), w+ + w- = Omega(p) = "
        "1/sqrt(p(1-p)+eps), and equals sigma(logit p_ref + Omega(p)/beta)",
    )


@register(
    "gibbs.h_two_forms",
    "The two written forms of h agree: sigma(logit p_ref + 1/(beta s)) = "
    "1/(1 + ((1-p_ref)/p_ref) exp(-1/(beta s))), s = sqrt(p(1-p)+eps)",
    "Thm 2, eq. of h",
    SEC,
)
def h_two_forms(ctx: Context) -> Outcome:
    pr, s = sp.symbols("p_ref s", positive=True)
    first = sigma(logit(pr) + 1 / (beta * s))
    second = 1 / (1 + (1 - pr) / pr * sp.exp(-1 / (beta * s)))
    ok = equal(first, second)
    return Outcome(
        ok, "symbolic", "exp(-logit p_ref - c) = ((1-p_ref)/p_ref) exp(-c): split and cancel"
    )
