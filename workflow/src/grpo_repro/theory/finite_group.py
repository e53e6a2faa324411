"""docs/theory.md Sec. 8 (not in the paper): GRPO at a finite group size G, each group
whitened with its OWN mean and spread, eq. (4) with p_hat = k/G for p.

Conditioning a sample on its reward and averaging over the other G - 1 samples (Binomial(G-1, p))
gives the expected weights w+_G, w-_G, Omega_G = w+_G + w-_G (grpo_repro.dynamics.finite_group),
and the stationary points of the expected per-prompt update at the fixed points of
h_G(p) = sigma(logit p_ref + Omega_G(p)/beta). Checks (eps = the pipeline's train.smoothing_eps,
Context.smoothing_eps, unless stated):

- fg.omega_limit (numeric): the product's Omega_G tends to eq. (4)'s Omega (weights.omega): the sup
  error over p in [0.05, 0.95] strictly decreases along G = 4 .. 4096, is <= OMEGA_LIMIT_TOL at
  G = 4096 and shrinks like 1/G there (G x error within 10% between G = 1024 and 4096);
- fg.dr_weights (symbolic): for each G = 2..DR_MAX_G, the Binomial sums of the mean-only advantage
  A = r - p_hat equal (G-1)/G times Sec. 5's population weights (1-p, p) for every p, so the Gibbs
  PoS (Thm 8) gives logit p*_G = logit p_ref + (1 - 1/G)/beta;
- fg.dr_law (numeric): the product's mean-only weights, Dr. GRPO step and fixed point at group
  size G follow that law;
- fg.brute_force_weights, fg.oracle_stationary: exact enumeration of groups through the trainer's
  advantage, theory.finite_group_exact.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from grpo_repro.dynamics import finite_group as fg
from grpo_repro.dynamics import maps as dyn

from . import gibbs as gb
from . import weights as wts
from .core import Context, Outcome, equal, log_uniform, numeric_outcome, register

SEC = "docs/theory.md Sec. 8 (finite group size)"
#: group sizes of fg.omega_limit, and the sup error |Omega_G - Omega| allowed at the largest
LIMIT_G = (4, 8, 16, 64, 256, 1024, 4096)
OMEGA_LIMIT_TOL = 5e-3
#: largest G of the symbolic Dr. GRPO proof (one sympy identity per G = 2..DR_MAX_G)
DR_MAX_G = 12
#: largest G of the brute-force enumeration (2^G reward vectors)
BRUTE_MAX_G = 10
#: the oracle's stationary PoS must differ from the population p* by at least this much
DISCRIMINATION = 1e-4

p = sp.Symbol("p", positive=True)
beta = sp.Symbol("beta", positive=True)
p_ref = sp.Symbol("p_ref", positive=True)


def _omega_reference(pp, eps):
    """eq. (4)'s Omega (weights.omega), lambdified at call time (a mutated formula reaches it)."""
    q, e = sp.symbols("q e", positive=True)
    return sp.lambdify((q, e), wts.omega(q, e), "numpy")(pp, eps)


def mean_only_advantage(reward, p_hat):
    """Dr. GRPO's advantage (Sec. 5), A = r - p_hat, at the group's own mean."""
    return reward - p_hat


def group_weights_symbolic(g: int, advantage=None):
    """(w+_G, w-_G) as sympy expressions in p: E[A | r = 1] over k = 1 + J and -E[A | r = 0] over
    k = J, J ~ Binomial(G-1, p), A = advantage(r, k/G) (default: mean-only)."""
    adv = mean_only_advantage if advantage is None else advantage
    pmf = [sp.binomial(g - 1, j) * p**j * (1 - p) ** (g - 1 - j) for j in range(g)]
    w_p = sum(m * adv(1, sp.Rational(j + 1, g)) for j, m in enumerate(pmf))
    w_m = -sum(m * adv(0, sp.Rational(j, g)) for j, m in enumerate(pmf))
    return w_p, w_m


# ----------------------------------------------------------------------------- Omega_G -> Omega


@register(
    "fg.omega_limit",
    "Omega_G (groups whitened by their own statistics) tends to eq. (4)'s Omega as G grows: "
    "sup over p in [0.05, 0.95] of |Omega_G - Omega| strictly decreases along G = 4..4096, is "
    f"<= {OMEGA_LIMIT_TOL:g} at G = 4096 and shrinks like 1/G (eps = train.smoothing_eps)",
    "docs/theory.md Sec. 8",
    SEC,
)
def omega_limit(ctx: Context, sizes=LIMIT_G, limit_tol: float = OMEGA_LIMIT_TOL) -> Outcome:
    eps = ctx.smoothing_eps
    pp = np.concatenate([[0.05, 0.5, 0.95], ctx.rng.uniform(0.05, 0.95, ctx.n_random)])
    om = _omega_reference(pp, eps)
    sup = np.array([np.max(np.abs(fg.omega(pp, g, eps) - om)) for g in sizes])
    decreasing = bool(np.all(np.diff(sup) < 0))
    rate = sizes[-1] * sup[-1] / (sizes[-2] * sup[-2])  # ~1 for an O(1/G) error
    ok = decreasing and bool(sup[-1] <= limit_tol) and bool(abs(rate - 1) <= 0.1)
    ratio = {
        g: [float(_omega_reference(q, eps) / fg.omega(q, g, eps)) for q in (0.5, 0.8, 0.9)]
        for g in (8, 16)
    }
    return Outcome(
        ok,
        "numeric",
        f"sup |Omega_G - Omega| over {len(pp)} random points in [0.05, 0.95] (and 0.05, 0.5, 0.95) "
        f"at eps = {eps:g}: "
        + ", ".join(f"G={g}: {s:.3g}" for g, s in zip(sizes, sup))
        + f" ({'strictly decreasing' if decreasing else 'NOT decreasing'}; tol {limit_tol:g} at "
        f"G = {sizes[-1]}); {sizes[-1]} err({sizes[-1]}) / ({sizes[-2]} err({sizes[-2]})) = "
        f"{rate:.3f} (1/G rate: within 0.1 of 1); Omega/Omega_G at p = 0.5, 0.8, 0.9: "
        + "; ".join(f"G={g}: " + ", ".join(f"{v:.3f}" for v in r) for g, r in ratio.items()),
        len(pp),
    )


# ----------------------------------------------------------------------------- Dr. GRPO


@register(
    "fg.dr_weights",
    "Dr. GRPO (A = r - p_hat, the group's own mean): w+_G = (1 - 1/G)(1-p), w-_G = (1 - 1/G) p "
    "exactly, so the Gibbs step (Thm 8) gives logit p*_G = logit p_ref + (1 - 1/G)/beta",
    "docs/theory.md Sec. 8; Sec. 5; Thm 8",
    SEC,
)
def dr_weights(ctx: Context, max_g: int = DR_MAX_G) -> Outcome:
    pop_p, pop_m = wts.dr_weights(p)
    bad = []
    for g in range(2, max_g + 1):  # polynomials in p: expanded to 0
        w_p, w_m = group_weights_symbolic(g)
        c = sp.Rational(g - 1, g)
        if sp.expand(w_p - c * pop_p) != 0 or sp.expand(w_m - c * pop_m) != 0:
            bad.append(g)
    # Thm 8 with weights c(1-p), c p (any c > 0): odds(p_new) = odds(p_ref) e^{c/beta}
    c = sp.Symbol("c", positive=True)
    p_new = gb.gibbs_pos(p_ref, c * pop_p, c * pop_m, beta)
    law = equal(p_new / (1 - p_new), p_ref / (1 - p_ref) * sp.exp(c / beta))
    return Outcome(
        not bad and law,
        "symbolic",
        f"for every G = 2..{max_g}: sum_j C(G-1, j) p^j (1-p)^(G-1-j) A(1, (j+1)/G) - (G-1)/G (1-p) "
        "and -sum_j C(G-1, j) p^j (1-p)^(G-1-j) A(0, j/G) - (G-1)/G p, A = r - p_hat, expand to 0 "
        "(weights.dr_weights)"
        + (f" EXCEPT at G = {bad}" if bad else "")
        + "; with weights c(1-p), c p, gibbs_pos gives odds p_ref/(1-p_ref) e^{c/beta}"
        + ("" if law else " FAILS")
        + ", so logit p*_G = logit p_ref + (1 - 1/G)/beta",
    )


@register(
    "fg.dr_law",
    "The product's finite-group Dr. GRPO: dynamics.finite_group's mean-only weights are (G-1)/G "
    "(1-p, p) and dynamics.maps.step_logit('dr_grpo', group_size=G) maps every p to "
    "sigma(logit p_ref + (1 - 1/G)/beta), its fixed point",
    "docs/theory.md Sec. 8",
    SEC,
)
def dr_law(ctx: Context) -> Outcome:
    rng, n = ctx.rng, ctx.n_random
    g = rng.integers(2, 4097, n)
    pp, pr = rng.uniform(0, 1, n), rng.uniform(0.01, 0.99, n)
    b = log_uniform(rng, 0.1, 10, n)
    errs = []
    for gi, pi, ri, bi in zip(g, pp, pr, b):
        c = 1 - 1 / gi
        w_p, w_m = fg.weights(pi, int(gi), ctx.smoothing_eps, mean_only=True)
        x_prev = np.log(pi) - np.log1p(-pi)
        step = dyn.step_logit("dr_grpo", x_prev, ri, bi, ctx.smoothing_eps, group_size=int(gi))
        law = np.log(ri) - np.log1p(-ri) + c / bi
        again = dyn.step_logit("dr_grpo", law, ri, bi, ctx.smoothing_eps, group_size=int(gi))
        errs += [abs(w_p - c * (1 - pi)), abs(w_m - c * pi), abs(step - law), abs(again - law)]
    return numeric_outcome(
        np.array(errs),
        ctx.tol,
        "|w+_G - (1-1/G)(1-p)|, |w-_G - (1-1/G) p| (finite_group.weights, mean_only) and the "
        "logit error of step_logit('dr_grpo', group_size=G) from p and from the law's p*_G vs "
        "logit p_ref + (1-1/G)/beta, G in 2..4096",
        n,
    )
