"""TRL's per-sample KL estimator k3 and its gradient on a categorical (softmax) policy
(docs/theory.md Sec. 7; not in the paper).

With samples o ~ pi_theta and r(o) = pi_ref(o)/pi_theta(o), TRL estimates the KL penalty per
token by k3 = r - 1 - log r. What the optimiser sees is the expectation over the samples of the
autograd gradient of the per-sample loss (samples fixed, gradient through pi_theta only):
- plain k3:                        E_pi[(1 - r) grad log pi]  = grad KL(pi_ref || pi)  (REVERSE KL)
- k3 * pi_theta/pi_old at pi_old = pi (TRL's use_bias_correction_kl):
                                   E_pi[log(pi/pi_ref) grad log pi] = grad KL(pi || pi_ref)  (the
                                   theory's KL, whose regularised optimum is the Gibbs policy).
`estimator_grad` computes these expectations exactly (sum over the K outcomes) from per-sample
gradients taken by complex-step differentiation of the per-sample loss (no closed form used);
`grad_kl_forward` / `grad_kl_reverse` are the closed-form gradients they are compared with.
"""

from __future__ import annotations

import numpy as np

_STEP = 1e-30  # complex step: derivative exact to rounding, no cancellation


def log_softmax(theta: np.ndarray) -> np.ndarray:
    """log softmax along the last axis; works for complex theta (complex-step differentiation)."""
    m = np.max(theta.real, axis=-1, keepdims=True)
    z = theta - m
    return z - np.log(np.sum(np.exp(z), axis=-1, keepdims=True))


def k3(log_pi: np.ndarray, log_ref: np.ndarray) -> np.ndarray:
    """Per-outcome k3 = r - 1 - log r, r = pi_ref/pi (>= 0, = 0 iff r = 1)."""
    log_r = log_ref - log_pi
    return np.exp(log_r) - 1 - log_r


def per_sample_loss(theta, log_ref, theta_old, ratio: bool):
    """(K,) per-sample losses as functions of theta: k3(o), or k3(o) pi_theta(o)/pi_old(o)."""
    lp = log_softmax(theta)
    loss = k3(lp, log_ref)
    if ratio:
        loss = loss * np.exp(lp - log_softmax(theta_old))
    return loss


def per_sample_grads(theta: np.ndarray, log_ref: np.ndarray, ratio: bool) -> np.ndarray:
    """(K outcomes, K logits): d loss(o) / d theta_j at theta, pi_old = pi_theta held fixed."""
    theta = np.asarray(theta, float)
    k = theta.shape[-1]
    out = np.empty((k, k))
    for j in range(k):
        e = np.zeros(k, complex)
        e[j] = 1j * _STEP
        out[:, j] = per_sample_loss(theta + e, log_ref, theta, ratio).imag / _STEP
    return out


def estimator_grad(theta: np.ndarray, log_ref: np.ndarray, ratio: bool = False) -> np.ndarray:
    """E_{o ~ pi_theta}[grad_theta loss(o)] (exact sum over outcomes): the gradient the plain
    (ratio=False) or ratio-corrected (ratio=True) k3 penalty feeds the optimiser."""
    pi = np.exp(log_softmax(np.asarray(theta, float)))
    return pi @ per_sample_grads(theta, log_ref, ratio)


def kl(log_p: np.ndarray, log_q: np.ndarray) -> float:
    """KL(P || Q) for log-probability vectors."""
    return float(np.sum(np.exp(log_p) * (log_p - log_q)))


def grad_kl_forward(theta: np.ndarray, log_ref: np.ndarray) -> np.ndarray:
    """grad_theta KL(pi_theta || pi_ref) = pi (log(pi/pi_ref) - KL)."""
    lp = log_softmax(np.asarray(theta, float))
    pi = np.exp(lp)
    u = lp - log_ref
    return pi * (u - np.sum(pi * u))


def grad_kl_reverse(theta: np.ndarray, log_ref: np.ndarray) -> np.ndarray:
    """grad_theta KL(pi_ref || pi_theta) = pi - pi_ref."""
    return np.exp(log_softmax(np.asarray(theta, float))) - np.exp(log_ref)
