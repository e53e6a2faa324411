"""Thm 10's one-step errors delta_n (App. F) as the product measures them (grpo_repro.dynamics.oracle)
against the derived map h (gibbs.h_derived):

- num.thm10_delta: orc.compare's delta_n is the one-step error TV(pi~_n, T pi~_{n-1}) computed
  here, and the step condition it tests fails where the update expands TV (par.tv_can_expand).
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from grpo_repro.dynamics import maps as dyn
from grpo_repro.dynamics import oracle as orc

from . import gibbs as gb
from .core import Context, Outcome, log_uniform, register
from .numerics_maps import mp_function
from .numerics_oracle import SEC


def _expanding_case():
    """K = 2, p_ref = 1/1000, beta = 5, eps = 1e-5 (par.tv_can_expand): pi_0 with PoS 9/1000,
    pi~_0 with PoS 8/1000, pi~_n = T pi~_{n-1} exactly (one-step errors 0) except a small error
    at n = 3; T expands TV near the unstable fixed point."""
    beta, eps, p_ref = 5.0, 1e-5, 1e-3
    prob = orc.Problem(
        np.log(np.array([[p_ref, 1 - p_ref]])), np.array([[1.0, 0.0]]), np.array(["random"])
    )
    n_iter = 6
    ex = orc.exact_iterations(prob, "grpo", beta, eps, n_iter, log_pi0=np.log([[0.009, 0.991]]))
    tilde = np.empty_like(ex["log_pi"])
    tilde[0] = np.log([[0.008, 0.992]])
    for n in range(1, n_iter + 1):
        p_prev = orc.pos(tilde[n - 1], prob.reward)
        nxt = orc.gibbs_step(prob.log_pi_ref, prob.reward, p_prev, beta, eps, False)
        if n == 3:
            nxt = orc.log_normalise(nxt + np.array([[1e-3, 0.0]]))
        tilde[n] = nxt
    return prob, ex["log_pi"], tilde, (beta, eps, p_ref)


@register(
    "num.thm10_delta",
    "dynamics.orc.compare measures Thm 10's delta_n as the one-step error TV(pi~_n, T pi~_{n-1}) "
    "(T the exact update, derived map h here), not from TV_n itself, so the step condition "
    "TV_n <= TV_{n-1} + delta_n it reports is falsifiable: it fails where T expands TV",
    "Thm 10 (App. F)",
    SEC,
)
def thm10_delta(ctx: Context) -> Outcome:
    prob, exact, tilde, (beta, eps, p_ref) = _expanding_case()
    one = orc.one_step_targets(prob, tilde, "grpo", beta, eps)
    res = orc.compare(tilde, exact, prob.reward, one)
    hf = mp_function(gb.h_derived(sp.Symbol("p"), p_ref, beta, eps), (sp.Symbol("p"),))
    p_t = np.exp(tilde[:, 0, 0])
    own = np.array([abs(p_t[n] - hf(p_t[n - 1])) for n in range(1, len(p_t))])  # K = 2: TV = |dp|
    errs = [np.abs(res["delta"][:, 0] - own)]
    expands = int((~res["step_ok"][:, 0]).sum())
    # random problems and variants: pi~_n = T pi~_(n-1) plus noise; delta_n = TV to the target
    rng, n_cases = ctx.rng, max(50, ctx.n_random // 20)
    for _ in range(n_cases):
        pr = orc.make_problem(3, int(rng.integers(2, 7)), seed=int(rng.integers(1 << 30)))
        v = str(rng.choice(dyn.VARIANTS))
        a = float(rng.uniform(0.1, 0.9)) if v.startswith("two_kl") else None
        b, e = float(log_uniform(rng, 0.2, 5, 1)[0]), float(log_uniform(rng, 1e-5, 0.1, 1)[0])
        ex = orc.exact_iterations(pr, v, b, e, 4, alpha=a)["log_pi"]
        til, own_tv = [pr.log_pi_ref], []
        for _ in range(4):
            anchor = orc.anchor_of(v, pr.log_pi_ref, til[-1], a)
            p_prev = orc.pos(til[-1], pr.reward)
            target = orc.gibbs_step(anchor, pr.reward, p_prev, b, e, v in dyn.MEAN_ONLY)
            til.append(orc.log_normalise(target + rng.normal(0, 0.05, target.shape)))
            own_tv.append(0.5 * np.sum(np.abs(np.exp(til[-1]) - np.exp(target)), axis=-1))
        til = np.array(til)
        got = orc.compare(til, ex, pr.reward, orc.one_step_targets(pr, til, v, b, e, a))
        errs.append(np.abs(got["delta"] - np.array(own_tv)).ravel())
    err = np.concatenate(errs)
    ok = bool(np.max(err) <= ctx.tol) and expands > 0
    return Outcome(
        ok,
        "numeric",
        f"max |delta_n - TV(pi~_n, T pi~_(n-1))| = {np.max(err):.2g} over {n_cases + 1} random "
        f"points (tol {ctx.tol:g}): {n_cases} random problems and variants (4 noisy steps each), and "
        f"K = 2, beta = {beta}, p_ref = {p_ref}, eps = {eps}, PoS 8/1000 vs 9/1000 (delta_n = "
        f"|p~_n - h(p~_(n-1))| with the derived h: {np.array2string(own, precision=2)}), where the "
        f"step condition fails at {expands} of {len(own)} steps (expansion, par.tv_can_expand)",
        n_cases + 1,
    )
