"""The stationary points of GRPO's gradient dynamics with TRL's k3 estimator (docs/theory.md
Sec. 7), computed with the product's estimator gradients (grpo_repro.dynamics.kl_estimators)
against the fixed points of the derived map (grpo_repro.dynamics.fixed_points):

- kl.stationary_points: docs/theory.md Sec. 7's last sentence: with the ratio-corrected k3 the
  stationary points are the fixed points p = h(p); with plain k3 they are not.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import fsolve

from grpo_repro.dynamics import fixed_points as fxp
from grpo_repro.dynamics import kl_estimators as kle
from grpo_repro.dynamics import oracle as orc

from .core import Context, Outcome, log_uniform, numeric_outcome, register

#: kl.stationary_points' 6-outcome example of the plain k3 estimator's miss (docs/theory.md Sec. 7)
EXAMPLE_PI = (0.3, 0.25, 0.2, 0.12, 0.08, 0.05)


def _gradient(theta, log_ref, reward, beta, eps, ratio=True):
    """Expected gradient of GRPO's per-prompt objective, weights frozen at the current PoS:
    E_pi[a grad log pi] - beta (TRL k3 estimator gradient, ratio-corrected or plain)."""
    lp = kle.log_softmax(theta)
    pi = np.exp(lp)
    p = float(np.sum(pi * reward))
    a = orc.advantage_table(reward[None], np.array([p]), eps, False)[0]
    return pi * (a - np.sum(pi * a)) - beta * kle.estimator_grad(theta, log_ref, ratio=ratio), p


@register(
    "kl.stationary_points",
    "With TRL's ratio-corrected k3 estimator and a policy free per prompt, the stationary points "
    "of GRPO's gradient dynamics (advantage weights at the current policy) are the fixed points "
    "p = h(p); with plain k3 they are not",
    "docs/theory.md Sec. 7",
    "docs/theory.md Sec. 7",
)
def stationary_points(ctx: Context) -> Outcome:
    rng = ctx.rng
    n_sets = max(2, ctx.n_random // 40)
    errs, n_fp, n_stat, n_far, plain_miss = [], 0, 0, 0, []
    for _ in range(n_sets):
        k = 6
        prob = orc.make_problem(1, k, seed=int(rng.integers(1 << 30)), controls=False)
        log_ref, reward = prob.log_pi_ref[0], prob.reward[0]
        beta, eps = float(log_uniform(rng, 0.3, 5, 1)[0]), float(log_uniform(rng, 1e-4, 0.1, 1)[0])
        p_ref = float(prob.p_ref[0])
        # fixed point -> stationary: the Gibbs policy at every fixed point (stable or not)
        for fp in fxp.fixed_points(beta, p_ref, eps):
            if abs(fp.logit_p_star) > 30:  # k3's e^{log pi_ref - log pi} overflows there
                n_far += 1
                continue
            lp = orc.gibbs_step(
                prob.log_pi_ref, prob.reward, np.array([fp.p_star]), beta, eps, False
            )[0]
            g, p = _gradient(lp, log_ref, reward, beta, eps)
            errs += [float(np.max(np.abs(g))), abs(p - fp.p_star)]
            g_plain, _ = _gradient(lp, log_ref, reward, beta, eps, ratio=False)
            plain_miss.append(float(np.max(np.abs(g_plain))))
            n_fp += 1

        # stationary -> fixed point: every zero of the gradient field found from 3 starts
        # (theta_K = 0 fixes the softmax gauge; the K components of the gradient sum to 0)
        def field(t, log_ref=log_ref, reward=reward, beta=beta, eps=eps):
            return _gradient(np.append(t, 0.0), log_ref, reward, beta, eps)[0][:-1]

        fps = [f.p_star for f in fxp.fixed_points(beta, p_ref, eps)]
        for _ in range(3):
            start = orc.gibbs_step(
                prob.log_pi_ref, prob.reward, rng.uniform(0, 1, 1), beta, eps, False
            )[0]
            start = start + rng.normal(0, 0.3, k)  # a random policy near the Gibbs family
            t0 = start[:-1] - start[-1]
            t, info, ier, _msg = fsolve(field, t0, full_output=True, xtol=1e-14)
            g, p = _gradient(np.append(t, 0.0), log_ref, reward, beta, eps)
            interior = np.max(np.abs(t)) < 30  # not a saturated softmax (gradient ~ pi ~ 0)
            if ier == 1 and interior and np.max(np.abs(g)) < 1e-12:
                errs.append(min(abs(p - f) for f in fps) / max(p, 1e-3) * 1e-3)
                n_stat += 1
    # the stage's own 6-outcome example (docs/theory.md's is unstated): pi = EXAMPLE_PI, pi_ref uniform
    theta, log_u = np.log(EXAMPLE_PI), np.full(6, -np.log(6))
    example = float(
        np.max(np.abs(kle.estimator_grad(theta, log_u) - kle.grad_kl_forward(theta, log_u)))
    )
    n_pts = n_fp + n_stat
    out = numeric_outcome(
        np.array(errs),
        ctx.tol,
        "|gradient| at the Gibbs policy of every fixed point, |PoS - p*|, and 1e-3 x relative "
        "distance of each interior stationary point's PoS (|gradient| < 1e-12, |logits| < 30) to "
        "the nearest fixed point",
        n_pts,
    )
    ok = out.passed and min(plain_miss) > 1e-6 and n_stat > 0
    return Outcome(
        ok,
        "numeric",
        out.detail
        + f"; {n_fp} fixed points ({n_far} more with |logit p*| > 30 skipped) and {n_stat} "
        f"stationary points (fsolve, 3 starts each) on {n_sets} "
        "random 6-outcome prompts; with plain k3 the "
        f"gradient there is NOT 0 (min max|grad| {min(plain_miss):.3g}); on the 6-outcome "
        f"example pi = {EXAMPLE_PI}, pi_ref uniform, the plain k3 gradient misses "
        f"grad KL(pi || pi_ref) by {example:.3f} (max abs over the logits; docs/theory.md quotes 0.08 "
        "for an unstated example)",
        n_pts,
    )
