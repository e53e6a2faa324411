"""Thm 10 (App. F) measured on sample-based GRPO (grpo_repro.dynamics.oracle_sgd) against the exact
iterates (grpo_repro.dynamics.oracle), with delta_n as the theorem uses it.

Thm 10: if TV(pi~_n, pi_n) <= TV(pi~_{n-1}, pi_{n-1}) + delta_n with sum_i delta_i -> delta* in
[0, 1), and p_n -> p*, then limsup |p~_n - p*| <= 2 delta*.

delta_n is measured independently of TV_n = TV(pi~_n, pi_n): it is the one-step error of the
parametric update, delta_n = TV(pi~_n, T pi~_{n-1}), T the exact update of the variant (Thm 8 on
the variant's anchor with weights at p~_{n-1}) - the statistical, approximation and optimisation
error of step n. Then:
- the step condition TV_n <= TV_{n-1} + delta_n is a genuine condition (it holds when T does not
  expand TV, e.g. |h'| <= 1 along the way for GRPO; theory check par.tv_can_expand shows it can
  fail) and is tested per prompt and step (`step_ok`);
- delta*_n = sum_{i<=n} delta_i; the assumption holds for a prompt iff every step condition holds
  and delta*_N < 1 (`assumption_holds`);
- the conclusion is tested as stated: p* = the exact iterates' limit (`exact_converged`: the last
  two exact PoS agree to `conv_tol`), tail_gap = max over the last `tail` iterations (at most
  half of them, never n = 0) of |p~_n - p*|, `conclusion_holds` = tail_gap <= 2 delta*_N +
  max_tail |p_n - p*| (the finite-n form of the limsup bound: the last term -> 0 as p_n -> p*);
  the bound applies only where the assumption holds and p_n converged (`bound_applies`), and is
  reported only there.
The event lemma |p~_n - p_n| <= TV_n is reported separately (`event_ok`).
"""

from __future__ import annotations

import numpy as np

from grpo_repro import variants as reg
from grpo_repro.dynamics import oracle as orc


def tv(log_p: np.ndarray, log_q: np.ndarray) -> np.ndarray:
    return 0.5 * orc.l1_distance(log_p, log_q)


def one_step_targets(problem, log_pi_sgd, variant, beta, eps, alpha=None) -> np.ndarray:
    """T pi~_{n-1} for n = 1..N (N, Q, K): the exact update applied to the parametric iterate."""
    mean_only = reg.get(variant).mean_only
    out = np.empty((len(log_pi_sgd) - 1,) + problem.shape)
    for n in range(1, len(log_pi_sgd)):
        prev = log_pi_sgd[n - 1]
        anchor = orc.anchor_of(variant, problem.log_pi_ref, prev, alpha)
        p_prev = orc.pos(prev, problem.reward)
        out[n - 1] = orc.gibbs_step(anchor, problem.reward, p_prev, beta, eps, mean_only)
    return out


def compare(
    log_pi_sgd: np.ndarray,
    log_pi_exact: np.ndarray,
    reward: np.ndarray,
    one_step: np.ndarray,
    tail: int = 5,
    conv_tol: float = 1e-6,
    slack: float = 1e-12,
) -> dict:
    """Per iteration n and prompt: TV_n, |p~_n - p_n|, delta_n, delta*_n, the step condition and
    the assumption so far; per prompt: p*, convergence of p_n, tail gap and the conclusion."""
    t = tv(log_pi_sgd, log_pi_exact)  # (N+1, Q)
    p_sgd, p_ex = orc.pos(log_pi_sgd, reward), orc.pos(log_pi_exact, reward)
    delta = tv(log_pi_sgd[1:], one_step)  # (N, Q)
    delta_star = np.vstack([np.zeros((1, t.shape[1])), np.cumsum(delta, axis=0)])
    step_ok = t[1:] <= t[:-1] + delta + slack  # (N, Q)
    steps_so_far = np.vstack([np.ones((1, t.shape[1]), bool), np.cumprod(step_ok, axis=0) > 0])
    assumption_n = steps_so_far & (delta_star < 1)
    p_star = p_ex[-1]
    converged = np.abs(p_ex[-1] - p_ex[-2]) <= conv_tol
    tail = min(tail, max(1, (len(t) - 1) // 2))  # the last iterations, never n = 0
    tail_gap = np.max(np.abs(p_sgd[-tail:] - p_star[None]), axis=0)
    exact_gap = np.max(np.abs(p_ex[-tail:] - p_star[None]), axis=0)  # |p_n - p*|, finite n
    bound = 2 * delta_star[-1]
    return dict(
        tv=t,
        gap=np.abs(p_sgd - p_ex),
        event_ok=np.abs(p_sgd - p_ex) <= t + slack,
        delta=delta,
        delta_star=delta_star,
        step_ok=step_ok,
        step_violation=np.maximum(t[1:] - t[:-1] - delta, 0.0),
        assumption_n=assumption_n,
        assumption_holds=assumption_n[-1],
        gap_to_pstar=np.abs(p_sgd - p_star[None]),
        p_star=p_star,
        exact_converged=converged,
        tail_gap=tail_gap,
        bound=bound,
        conclusion_holds=tail_gap <= bound + exact_gap + slack,
        bound_applies=assumption_n[-1] & converged,
        p_sgd=p_sgd,
        p_exact=p_ex,
    )
