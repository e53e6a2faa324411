"""The finite-policy oracle the figures use (grpo_repro.dynamics.oracle, oracle_sgd) against the
derived maps: the exact Gibbs step (Thm 8, Lemma 2-3, Thm 9) and the clipped surrogate's gradient
(Sec. 2.2).

- num.oracle_gibbs_step: the PoS of oracle.gibbs_step on every variant's anchor equals
  dynamics.maps.step_logit (itself tied to the derived maps by num.recurrences_vs_symbolic and
  num.edges), including eps = 0, the p_ref in {0, 1} control prompts and, for two-KL, a
  perturbed pi_{n-1} (Delta_R != 0, with oracle.delta_r equal to Thm 9's Renyi term
  two_kl.delta_renyi on the actual conditionals).
- num.clipped_surrogate: oracle_sgd.surrogate's objective is the mean of clipped_objective (checked
  by adv.clip_identity_numeric) minus the KL term, and its gradient is that objective's gradient
  (central differences).

- num.thm10_delta: Thm 10's one-step errors delta_n (App. F) as the product measures them
  (orc.compare, against the derived map h, gibbs.h_derived) are the one-step error
  TV(pi~_n, T pi~_{n-1}) computed here, and the step condition it tests fails where the update
  expands TV (par.tv_can_expand).
- kl.stationary_points: the stationary points of GRPO's gradient dynamics with TRL's k3 estimator
  (docs/theory.md Sec. 7), computed with the product's estimator gradients
  (grpo_repro.dynamics.kl_estimators) against the fixed points of the derived map
  (grpo_repro.dynamics.fixed_points): with the ratio-corrected k3 they are the fixed points
  p = h(p); with plain k3 they are not.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from scipy.optimize import fsolve
from scipy.special import expit

from grpo_repro import variants as reg
from grpo_repro.dynamics import fixed_points as fxp
from grpo_repro.dynamics import kl_estimators as kle
from grpo_repro.dynamics import maps as dyn
from grpo_repro.dynamics import oracle as orc
from grpo_repro.dynamics import oracle_sgd as sgd

from . import gibbs as gb
from . import mirror_dr as md
from . import two_kl as tk
from . import weights as wts
from .core import Context, Outcome, log_uniform, numeric_outcome, register
from .numerics_maps import mp_function

SEC = "numerics (grpo_repro.dynamics, oracle)"


_WEIGHTS: dict = {}
_ADV = sp.lambdify(sp.symbols("r q e"), wts.advantage(*sp.symbols("r q e")), "numpy")
GRPO = reg.get("grpo")  # eq. (4)'s advantage, the one the paper's proofs use


def _weights_reference(p, eps, mean_only):
    """(w+, w-) of eq. (4) (weights.w_plus / w_minus) or of Dr. GRPO (weights.dr_weights)."""
    if mean_only not in _WEIGHTS:
        q, e = sp.symbols("q e", nonnegative=True)
        w = wts.dr_weights(q) if mean_only else (wts.w_plus(q, e), wts.w_minus(q, e))
        _WEIGHTS[mean_only] = [sp.lambdify((q, e), x, "numpy") for x in w]
    with np.errstate(divide="ignore", invalid="ignore"):
        return [np.broadcast_to(f(p, eps), np.shape(p)) for f in _WEIGHTS[mean_only]]


@register(
    "num.oracle_gibbs_step",
    "The oracle's exact step (dynamics.oracle.gibbs_step on each variant's anchor) moves the PoS "
    "as dynamics.maps.step_logit does, for every variant, eps >= 0, p_ref in {0, 1} controls and "
    "(two-KL) Delta_R != 0 from a perturbed pi_{n-1}; its weights are eq. (4)'s (Dr.: 1-p, p) and "
    "oracle.delta_r is Thm 9's Renyi term",
    "Thm 8; Lemma 2-3; Thm 9",
    SEC,
)
def oracle_gibbs_step(ctx: Context) -> Outcome:
    rng = ctx.rng
    n_sets = max(2, ctx.n_random // 50)
    errs, n_pts = [], 0
    for _ in range(n_sets):
        prob = orc.make_problem(8, int(rng.integers(2, 7)), seed=int(rng.integers(1 << 30)))
        prev = orc.perturbed_policy(prob, int(rng.integers(1 << 30)), scale=1.5)
        beta = float(log_uniform(rng, 0.1, 10, 1)[0])
        alpha = float(rng.uniform(0.1, 0.9))
        p_prev, p_ref = orc.pos(prev, prob.reward), prob.p_ref
        for v in dyn.VARIANTS:
            rec, mean_only = reg.get(v), v in md.MEAN_ONLY  # the library's record; the theory's
            for eps in (0.0, float(log_uniform(rng, 1e-6, 0.1, 1)[0])):
                if eps == 0 and (mean_only or v.startswith("two_kl")):
                    continue
                a = alpha if v.startswith("two_kl") else None
                dr = orc.delta_r(prob.log_pi_ref, prev, prob.reward, alpha) if a else 0.0
                anchor = orc.anchor_of(v, prob.log_pi_ref, prev, a)
                with np.errstate(invalid="ignore"):  # eps = 0 controls: 0/0 advantage
                    nxt = orc.gibbs_step(anchor, prob.reward, p_prev, beta, eps, rec)
                got = orc.pos(nxt, prob.reward)
                with np.errstate(divide="ignore"):
                    x = np.log(p_prev) - np.log1p(-p_prev)
                ref = expit(dyn.step_logit(v, x, p_ref, beta, eps, alpha=a, delta_r=dr))
                # controls, p_ref in {0, 1}: exactly 0 / 1 for the ref-anchored variants (eps > 0;
                # at eps = 0 their advantage is 0/0 at p in {0, 1}, see err.prop1_eps_zero)
                ctrl = prob.kind != "random"
                errs.append(np.abs(got - ref)[~ctrl])
                if eps > 0 and v in ("grpo", "dr_grpo", "two_kl", "two_kl_dr"):
                    errs.append(np.abs(got[ctrl] - p_ref[ctrl]))
                n_pts += int((~ctrl).sum())
                # the weights themselves (a constant shift of the tilt leaves the step unchanged)
                wp, wm = orc.weights(p_prev[~ctrl], eps, rec)
                ref_p, ref_m = _weights_reference(p_prev[~ctrl], eps, mean_only)
                errs += [np.abs(wp - ref_p), np.abs(wm - ref_m)]
                if a:
                    errs.append(
                        np.abs(dr - tk.renyi_reference(prob.log_pi_ref, prev, prob.reward, alpha))
                    )
    return numeric_outcome(
        np.concatenate(errs),
        ctx.tol,
        "absolute PoS error of the oracle's step vs step_logit and error of its weights vs "
        f"weights.w_plus / w_minus / dr_weights, every variant, {n_sets} random problems (K in 2..6, 8 prompts + 2 controls); "
        "error of oracle.delta_r vs two_kl.delta_renyi",
        n_pts,
    )


def _kl_reference(lp, anchors, beta, kl, idx):
    rows = np.arange(lp.shape[0])[:, None]
    val = 0.0
    for c, la in anchors:
        if kl == "exact":
            val = val + beta * c * np.sum(np.exp(lp) * (lp - la), axis=-1)
        else:
            val = val + beta * c * np.mean(kle.k3(lp[rows, idx], la[rows, idx]), axis=1)
    return val


@register(
    "num.clipped_surrogate",
    "oracle_sgd.surrogate (the objective of the sample-based oracle) is the mean over the group of "
    "the clipped surrogate clipped_objective(ratio, A, clip_eps) minus beta times the KL term "
    "(exact, or k3 on the samples), and its gradient is that objective's gradient; "
    "oracle_sgd.group_advantage is eq. (4) at the group's p_hat (mean-only: r - p_hat)",
    "Sec. 2.2 (GRPO-Clip); docs/theory.md Sec. 7",
    SEC,
)
def clipped_surrogate(ctx: Context, fd_tol: float = 1e-6) -> Outcome:
    rng = ctx.rng
    n_sets = max(2, ctx.n_random // 25)
    errs, n_pts, n_clip = [], 0, 0
    for i in range(n_sets):
        prob = orc.make_problem(6, 5, seed=int(rng.integers(1 << 30)), controls=False)
        log_old = orc.perturbed_policy(prob, int(rng.integers(1 << 30)))
        theta = log_old + rng.normal(0, 0.4, log_old.shape)
        idx = sgd.sample_outcomes(rng, log_old, 8)
        adv = rng.normal(0, 1, idx.shape) * (rng.random(idx.shape) > 0.2)
        clip_eps = None if i % 3 == 0 else float(rng.uniform(0.05, 0.4))
        kl = ("exact", "k3")[i % 2]
        alpha = float(rng.uniform(0.1, 0.9))
        anchors = [(alpha, prob.log_pi_ref), (1 - alpha, log_old)]
        beta = float(log_uniform(rng, 0.01, 1, 1)[0])
        obj, grad, nc = sgd.surrogate(theta, idx, adv, log_old, anchors, beta, clip_eps, kl)
        lp = orc.log_normalise(theta)
        rows = np.arange(lp.shape[0])[:, None]
        ratio = np.exp(lp[rows, idx] - log_old[rows, idx])
        if clip_eps is not None:  # central differences must not cross a kink of the clip
            near = np.minimum(np.abs(ratio - 1 - clip_eps), np.abs(ratio - 1 + clip_eps)).min(
                axis=1
            )
            keep = near > 1e-3
        else:
            keep = np.ones(len(ratio), bool)
        ref = sgd.clipped_objective(ratio, adv, clip_eps).mean(axis=1) - _kl_reference(
            lp, anchors, beta, kl, idx
        )
        errs.append(np.abs(obj - ref) / np.maximum(1, np.abs(ref)))
        step = 1e-6
        fd = np.empty_like(theta)
        for j in range(theta.shape[1]):
            d = np.zeros_like(theta)
            d[:, j] = step
            up = sgd.surrogate(theta + d, idx, adv, log_old, anchors, beta, clip_eps, kl)[0]
            dn = sgd.surrogate(theta - d, idx, adv, log_old, anchors, beta, clip_eps, kl)[0]
            fd[:, j] = (up - dn) / (2 * step)
        bad = np.max(np.abs(fd - grad), axis=1) > fd_tol * (1 + np.max(np.abs(grad), axis=1))
        errs.append(np.where(keep, bad, False).astype(float))
        n_pts += int(keep.sum())
        n_clip += nc
        # the group advantage fed to it: eq. (4) at the group's p_hat (Dr.: r - p_hat)
        r = prob.reward[rows, idx]
        eps = float(log_uniform(rng, 1e-6, 0.1, 1)[0])
        for v in ("grpo", "dr_grpo"):
            got, p_hat = sgd.group_advantage(r, eps, reg.get(v))
            ref = r - p_hat[:, None] if v in md.MEAN_ONLY else _ADV(r, p_hat[:, None], eps)
            errs.append(np.abs(got - ref).max(axis=1))
    return numeric_outcome(
        np.concatenate(errs),
        ctx.tol,
        f"relative objective error, advantage error and gradient mismatch indicator (central differences, tol "
        f"{fd_tol:g}) on {n_sets} random batches (6 prompts x 8 samples, two anchors, clip_eps "
        f"None or in (0.05, 0.4), exact KL or k3); {n_clip} clipped terms",
        n_pts,
    )


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
        nxt = orc.gibbs_step(prob.log_pi_ref, prob.reward, p_prev, beta, eps, GRPO)
        if n == 3:
            nxt = orc.log_normalise(nxt + np.array([[1e-3, 0.0]]))
        tilde[n] = nxt
    return prob, ex["log_pi"], tilde, (beta, eps, p_ref)


@register(
    "num.thm10_delta",
    "dynamics.oracle.compare measures Thm 10's delta_n as the one-step error TV(pi~_n, T pi~_{n-1}) "
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
            target = orc.gibbs_step(anchor, pr.reward, p_prev, b, e, reg.get(v))
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


#: kl.stationary_points' 6-outcome example of the plain k3 estimator's miss (docs/theory.md Sec. 7)
EXAMPLE_PI = (0.3, 0.25, 0.2, 0.12, 0.08, 0.05)


def _gradient(theta, log_ref, reward, beta, eps, ratio=True):
    """Expected gradient of GRPO's per-prompt objective, weights frozen at the current PoS:
    E_pi[a grad log pi] - beta (TRL k3 estimator gradient, ratio-corrected or plain)."""
    lp = kle.log_softmax(theta)
    pi = np.exp(lp)
    p = float(np.sum(pi * reward))
    a = orc.advantage_table(reward[None], np.array([p]), eps, GRPO)[0]
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
                prob.log_pi_ref, prob.reward, np.array([fp.p_star]), beta, eps, GRPO
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
                prob.log_pi_ref, prob.reward, rng.uniform(0, 1, 1), beta, eps, GRPO
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
