"""Sample-based GRPO on finite softmax policies, run as an LLM trainer runs it (Sec. 2, App. F, Thm 10).

Each iteration n (one "batch"): sample G outcomes per prompt from pi~_{n-1} (= pi_old), form the
empirical PoS p_hat, the smoothed whitened advantage A = (r - p_hat)/sqrt(p_hat(1-p_hat)+eps)
(eq. 4; mean-only: A = r - p_hat), then take mu gradient steps (TRL's num_iterations) on the
clipped surrogate
    (1/G) sum_i min(rho_i A_i, clip(rho_i, 1-clip_eps, 1+clip_eps) A_i) - beta KL-term,
rho_i = pi_theta(o_i)/pi_old(o_i), with plain gradient ascent or Adam on the logits theta
(one logit vector per prompt: a tabular softmax policy). The KL term is either exact
(sum over the K outcomes) or TRL's per-sample k3 estimator exp(l_a - l) - (l_a - l) - 1 on the G
samples (its gradient is that of KL(anchor || pi_theta) at pi_theta = pi_old, not of KL(pi || anchor)).
Anchors (the variant's record in grpo_repro.variants): pi_ref, pi_old (mirror), or both with
weights alpha, 1-alpha (two-KL).

A group whose G rewards are all 0 or all 1 has p_hat in {0, 1} and A = 0: it carries no
signal, only the KL term acts on it. The trajectories are compared with the exact iterates pi_n of
grpo_repro.dynamics.oracle by grpo_repro.dynamics.oracle.compare: TV(pi~_n, pi_n), |p~_n - p_n| <= TV, the
one-step errors delta_n = TV(pi~_n, T pi~_{n-1}), Thm 10's assumption and its conclusion
limsup |p~_n - p*| <= 2 delta*, tested where the assumption holds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grpo_repro import variants as reg
from grpo_repro.dynamics.oracle import Problem, log_normalise, pos


@dataclass(frozen=True)
class SGDSettings:
    variant: str = "grpo"
    beta: float = 1.0
    smoothing_eps: float = 1e-5
    G: int = 16  # samples per prompt (group size)
    mu: int = 10  # gradient steps per sampled batch
    lr: float = 0.5  # learning rate
    clip_eps: float | None = None  # ratio clipping range (None = no clipping)
    kl: str = "exact"  # exact | k3
    optimizer: str = "sgd"  # sgd (gradient ascent on logits) | adam
    alpha: float | None = None  # two-KL weight of KL(pi || pi_ref)
    n_iter: int = 20  # iterations (batches)
    seed: int = 0


def sample_outcomes(rng: np.random.Generator, log_pi: np.ndarray, G: int) -> np.ndarray:
    """G draws per prompt (Q, G) by inverse CDF."""
    cdf = np.cumsum(np.exp(log_pi), axis=-1)
    u = rng.random((log_pi.shape[0], G)) * cdf[:, -1:]
    idx = (u[:, :, None] >= cdf[:, None, :]).sum(-1)
    return np.minimum(idx, log_pi.shape[1] - 1)


def group_advantage(r: np.ndarray, eps: float, v: reg.Variant) -> tuple[np.ndarray, np.ndarray]:
    """(A (Q,G), p_hat (Q,)) of variant v: smoothed whitened advantage, or mean-only r - p_hat."""
    p_hat = r.mean(axis=1)
    centred = r - p_hat[:, None]
    if v.mean_only:
        return centred, p_hat
    return centred / np.sqrt(p_hat * (1 - p_hat) + eps)[:, None], p_hat


def clipped_objective(ratio: np.ndarray, adv: np.ndarray, clip_eps: float | None) -> np.ndarray:
    """PPO/GRPO clipped surrogate per sample, f(x, A) = min(x A, clip(x, 1-c, 1+c) A) (Sec. 2.2;
    clip_eps None: x A). The one implementation the oracle uses; theory adv.clip_identity_numeric
    checks it against the proven identity f = A min(x, 1+c) (A > 0), A max(x, 1-c) (A < 0)."""
    if clip_eps is None:
        return ratio * adv
    return np.minimum(ratio * adv, np.clip(ratio, 1 - clip_eps, 1 + clip_eps) * adv)


def surrogate(
    theta: np.ndarray,
    idx: np.ndarray,
    adv: np.ndarray,
    log_old: np.ndarray,
    anchors,
    beta: float,
    clip_eps: float | None,
    kl: str,
):
    """Per-prompt objective maximised by one gradient step and its gradient in the logits:
        J_q = (1/G) sum_i min(rho_i A_i, clip(rho_i) A_i) - beta sum_j c_j KL_j,
    KL_j = KL(pi_theta || anchor_j) (exact) or (1/G) sum_i k3(o_i) (TRL). Returns (J (Q,),
    grad (Q,K), n_clipped)."""
    q, k = theta.shape
    g_size = idx.shape[1]
    rows = np.arange(q)[:, None]
    onehot = (idx[:, :, None] == np.arange(k)).astype(float)  # (Q, G, K)
    lp = log_normalise(theta)
    pi = np.exp(lp)
    lp_s = lp[rows, idx]
    ratio = np.exp(lp_s - log_old[rows, idx])
    terms = clipped_objective(ratio, adv, clip_eps)
    active = terms == ratio * adv  # the min picks the unclipped term (gradient flows)
    obj = terms.mean(axis=1)
    n_clip = int(np.sum(~active & (adv != 0)))
    coef = np.where(active, ratio * adv, 0.0) / g_size  # d/d lp_s of the surrogate
    grad = np.einsum("qg,qgk->qk", coef, onehot) - coef.sum(1)[:, None] * pi
    for c, la in anchors:
        if kl == "exact":  # KL(pi || a); gradient pi (u - E_pi u), u = lp - la
            u = lp - la
            obj = obj - beta * c * np.sum(pi * u, axis=-1)
            grad = grad - beta * c * pi * (u - np.sum(pi * u, axis=-1, keepdims=True))
        else:  # k3 on the samples: exp(la_s - lp_s) - (la_s - lp_s) - 1
            z = la[rows, idx] - lp_s
            obj = obj - beta * c * np.mean(np.exp(z) - z - 1, axis=1)
            kc = (1.0 - np.exp(z)) / g_size
            grad = grad - beta * c * (np.einsum("qg,qgk->qk", kc, onehot) - kc.sum(1)[:, None] * pi)
    return obj, grad, n_clip


def run(problem: Problem, s: SGDSettings) -> dict:
    """Run sample-based GRPO; returns log_pi (n+1, Q, K), p (n+1, Q) and per-iteration
    frac_degenerate (n,) (share of the random prompts' groups with p_hat in {0,1}) and clip_frac (n,)
    (share of samples whose surrogate term is clipped)."""
    if s.kl not in ("exact", "k3"):
        raise ValueError(f"kl must be exact or k3, got {s.kl!r}")
    if s.optimizer not in ("sgd", "adam"):
        raise ValueError(f"optimizer must be sgd or adam, got {s.optimizer!r}")
    rng = np.random.default_rng(s.seed)
    variant = reg.get(s.variant)
    q, k = problem.shape
    theta = problem.log_pi_ref.copy()
    m = np.zeros_like(theta)
    v = np.zeros_like(theta)
    t_adam = 0
    traj = np.empty((s.n_iter + 1, q, k))
    traj[0] = log_normalise(theta)
    degenerate = np.empty(s.n_iter)
    clipped = np.zeros(s.n_iter)
    rows = np.arange(q)[:, None]
    counted = problem.kind == "random"  # control prompts (p_ref in {0, 1}) always degenerate
    counted = counted if counted.any() else np.ones(q, dtype=bool)
    for n in range(s.n_iter):
        log_old = log_normalise(theta)
        idx = sample_outcomes(rng, log_old, s.G)
        r = problem.reward[rows, idx]
        adv, p_hat = group_advantage(r, s.smoothing_eps, variant)
        degenerate[n] = np.mean(((p_hat == 0) | (p_hat == 1))[counted])
        anchors = variant.kl_terms(problem.log_pi_ref, log_old, s.alpha)
        n_clip = 0
        for _ in range(s.mu):
            _, grad, nc = surrogate(theta, idx, adv, log_old, anchors, s.beta, s.clip_eps, s.kl)
            n_clip += nc
            if s.optimizer == "sgd":
                theta = theta + s.lr * grad
            else:
                t_adam += 1
                m = 0.9 * m + 0.1 * grad
                v = 0.999 * v + 0.001 * grad**2
                theta = theta + s.lr * (m / (1 - 0.9**t_adam)) / (
                    np.sqrt(v / (1 - 0.999**t_adam)) + 1e-8
                )
            theta = theta - theta.max(axis=-1, keepdims=True)
        clipped[n] = n_clip / max(1, s.mu * r.size)
        traj[n + 1] = log_normalise(theta)
    return dict(
        log_pi=traj, p=pos(traj, problem.reward), frac_degenerate=degenerate, clip_frac=clipped
    )
