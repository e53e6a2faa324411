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

Thm 10's one-step errors delta_n (App. F) are checked in numerics_thm10 (num.thm10_delta), the
stationary points of GRPO's gradient dynamics with TRL's ratio-corrected k3 estimator
(docs/theory.md Sec. 7) in numerics_stationary (kl.stationary_points).
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from scipy.special import expit

from grpo_repro.dynamics import kl_estimators as kle
from grpo_repro.dynamics import maps as dyn
from grpo_repro.dynamics import oracle as orc
from grpo_repro.dynamics import oracle_sgd as sgd

from . import two_kl as tk
from . import weights as wts
from .core import Context, Outcome, log_uniform, numeric_outcome, register

SEC = "numerics (grpo_repro.dynamics, oracle)"


_WEIGHTS: dict = {}
_ADV = sp.lambdify(sp.symbols("r q e"), wts.advantage(*sp.symbols("r q e")), "numpy")


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
            mean_only = v in dyn.MEAN_ONLY
            for eps in (0.0, float(log_uniform(rng, 1e-6, 0.1, 1)[0])):
                if eps == 0 and (mean_only or v.startswith("two_kl")):
                    continue
                a = alpha if v.startswith("two_kl") else None
                dr = orc.delta_r(prob.log_pi_ref, prev, prob.reward, alpha) if a else 0.0
                anchor = orc.anchor_of(v, prob.log_pi_ref, prev, a)
                with np.errstate(invalid="ignore"):  # eps = 0 controls: 0/0 advantage
                    nxt = orc.gibbs_step(anchor, prob.reward, p_prev, beta, eps, mean_only)
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
                wp, wm = orc.weights(p_prev[~ctrl], eps, mean_only)
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
        for mean_only in (False, True):
            got, p_hat = sgd.group_advantage(r, eps, mean_only)
            ref = r - p_hat[:, None] if mean_only else _ADV(r, p_hat[:, None], eps)
            errs.append(np.abs(got - ref).max(axis=1))
    return numeric_outcome(
        np.concatenate(errs),
        ctx.tol,
        f"relative objective error, advantage error and gradient mismatch indicator (central differences, tol "
        f"{fd_tol:g}) on {n_sets} random batches (6 prompts x 8 samples, two anchors, clip_eps "
        f"None or in (0.05, 0.4), exact KL or k3); {n_clip} clipped terms",
        n_pts,
    )
