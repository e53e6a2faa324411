"""Finite-policy oracle: exact GRPO iterations on softmax policies over K outcomes (Thm 1, 4, 8, 9, Lemma 2-3).

A problem is a set of prompts q, each with K outcomes o, a reference policy pi_ref(.|q) (random
softmax) and a binary reward r(q, o) with at least one success and one failure per prompt, plus
control prompts whose outcomes all fail (p_ref = 0) or all succeed (p_ref = 1).

Exact iterations (Thm 8): with weights taken at p_{n-1} (eq. 4; mean-only: w+ = 1-p, w- = p),
    pi_n(o|q) = anchor(o|q) exp((w+ 1{r=1} - w- 1{r=0})/beta) / Z,
anchor = pi_ref (Thm 1), pi_{n-1} (mirror, Thm 4), or the geometric mean
pibar ~ pi_ref^alpha pi_{n-1}^(1-alpha) (two-KL: Lemma 2), the KL anchor of the variant's record in
grpo_repro.variants. The PoS of these
policies must follow the scalar recurrences of grpo_repro.dynamics, the two-KL one with
Delta_R = (1-alpha)[D_alpha(pi_ref,F || pi_{n-1},F) - D_alpha(pi_ref,S || pi_{n-1},S)] computed from
the actual success (S) / failure (F) conditional distributions (Lemma 3, Thm 9).

Note: from pi_0 = pi_ref every exact iterate keeps pi_ref's conditionals on S and on F (the Gibbs
factor is constant on each), so Delta_R = 0 identically; a perturbed pi_0 exercises Delta_R != 0
(it then decays like (1-alpha)^n).

An independent optimiser (`optimiser_iterations`) maximises the KL-regularised objective as the
paper writes it (both KL terms explicitly for two_kl, no Lemma 2) by a damped constrained Newton
method on the simplex, chained on its own iterates, and must land on the closed form.

Thm 10 (App. F) is measured on sample-based GRPO (grpo_repro.dynamics.oracle_sgd) against the exact
iterates (`compare`), with delta_n as the theorem uses it.

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

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from grpo_repro import variants as reg
from grpo_repro.dynamics import maps as dyn
from grpo_repro.dynamics import oracle as orc

VARIANTS = dyn.VARIANTS


@dataclass(frozen=True)
class Problem:
    """Prompts x outcomes: log pi_ref (rows normalised) and the binary reward."""

    log_pi_ref: np.ndarray  # (Q, K)
    reward: np.ndarray  # (Q, K) float in {0, 1}
    kind: np.ndarray  # (Q,) "random" | "zero" (p_ref = 0 control) | "one" (p_ref = 1 control)

    @property
    def p_ref(self) -> np.ndarray:
        return pos(self.log_pi_ref, self.reward)

    @property
    def shape(self):
        return self.log_pi_ref.shape


def log_normalise(logits: np.ndarray) -> np.ndarray:
    return logits - logsumexp(logits, axis=-1, keepdims=True)


def make_problem(
    n_prompts: int, n_outcomes: int, seed: int, logit_scale: float = 2.0, controls: bool = True
) -> Problem:
    """Random pi_ref (Gaussian logits, std `logit_scale`) and rewards with >= 1 success and
    >= 1 failure per prompt; `controls` appends one p_ref = 0 and one p_ref = 1 prompt."""
    if n_outcomes < 2:
        raise ValueError("need K >= 2 outcomes (one success and one failure)")
    rng = np.random.default_rng(seed)
    q = n_prompts + (2 if controls else 0)
    logits = rng.normal(0.0, logit_scale, size=(q, n_outcomes))
    reward = np.zeros((q, n_outcomes))
    for i in range(n_prompts):
        m = rng.integers(1, n_outcomes)  # successes in 1..K-1
        reward[i, rng.choice(n_outcomes, size=m, replace=False)] = 1.0
    kind = np.array(["random"] * n_prompts + (["zero", "one"] if controls else []))
    if controls:
        reward[n_prompts + 1] = 1.0
    return Problem(log_normalise(logits), reward, kind)


def perturbed_policy(problem: Problem, seed: int, scale: float = 1.0) -> np.ndarray:
    """log pi_0 = log pi_ref + N(0, scale^2) noise, renormalised (an initial policy != pi_ref)."""
    rng = np.random.default_rng(seed)
    return log_normalise(problem.log_pi_ref + rng.normal(0.0, scale, size=problem.shape))


def pos(log_pi: np.ndarray, reward: np.ndarray) -> np.ndarray:
    """Probability of success p = sum_o pi(o) r(o) (axis -1), clipped to [0, 1] (rounding)."""
    return np.clip(np.sum(np.exp(log_pi) * reward, axis=-1), 0.0, 1.0)


def weights(p: np.ndarray, eps: float, v: reg.Variant) -> tuple[np.ndarray, np.ndarray]:
    """(w+, w-) at p of variant v's advantage: eq. (4) smoothed whitening, or mean-only (Dr. GRPO)
    1-p, p."""
    if v.mean_only:
        return 1.0 - p, p
    return dyn.w_plus(p, eps), dyn.w_minus(p, eps)


def advantage_table(reward: np.ndarray, p: np.ndarray, eps: float, v: reg.Variant) -> np.ndarray:
    """a(q, o) = w+(p_q) 1{r=1} - w-(p_q) 1{r=0} (the weighted contrastive reward of variant v)."""
    wp, wm = weights(p, eps, v)
    return wp[:, None] * reward - wm[:, None] * (1.0 - reward)


def two_kl_anchor(log_pi_ref: np.ndarray, log_pi_prev: np.ndarray, alpha: float) -> np.ndarray:
    """Lemma 2: pibar ~ pi_ref^alpha pi_prev^(1-alpha), normalised."""
    return log_normalise(alpha * log_pi_ref + (1 - alpha) * log_pi_prev)


def renyi_conditional(
    log_p: np.ndarray, log_q: np.ndarray, mask: np.ndarray, a: float
) -> np.ndarray:
    """D_a(P_M || Q_M) between the conditionals of P and Q on the outcome set M (mask), per row;
    D_a(P||Q) = log(sum P^a Q^(1-a)) / (a-1). NaN where M is empty."""
    neg = -np.inf
    lp = np.where(mask, log_p, neg)
    lq = np.where(mask, log_q, neg)
    empty = ~mask.any(axis=-1)
    with np.errstate(invalid="ignore"):
        lp = lp - logsumexp(lp, axis=-1, keepdims=True)
        lq = lq - logsumexp(lq, axis=-1, keepdims=True)
        s = logsumexp(np.where(mask, a * lp + (1 - a) * lq, neg), axis=-1)
    return np.where(empty, np.nan, s / (a - 1))


def delta_r(
    log_pi_ref: np.ndarray, log_pi_prev: np.ndarray, reward: np.ndarray, alpha: float
) -> np.ndarray:
    """Thm 9: Delta_R = (1-alpha)[D_alpha(pi_ref,F || pi_prev,F) - D_alpha(pi_ref,S || pi_prev,S)];
    0 on prompts without successes or without failures (the controls)."""
    succ = reward > 0.5
    d_s = renyi_conditional(log_pi_ref, log_pi_prev, succ, alpha)
    d_f = renyi_conditional(log_pi_ref, log_pi_prev, ~succ, alpha)
    out = (1 - alpha) * (d_f - d_s)
    return np.where(np.isnan(out), 0.0, out)


def anchor_of(variant: str, log_pi_ref, log_pi_prev, alpha=None) -> np.ndarray:
    """log of the KL anchor of `variant` (its registry record's): pi_ref, pi_{n-1} or pibar."""
    v = reg.get(variant)
    if v.ref_anchored:
        return log_pi_ref
    if v.prev_anchored:
        return log_pi_prev
    return two_kl_anchor(log_pi_ref, log_pi_prev, alpha)


def gibbs_step(
    log_anchor: np.ndarray,
    reward: np.ndarray,
    p_prev: np.ndarray,
    beta: float,
    eps: float,
    v: reg.Variant,
) -> np.ndarray:
    """Thm 8: log pi_n = log anchor + a/beta - log Z (a: variant v's advantage)."""
    a = advantage_table(reward, p_prev, eps, v)
    return log_normalise(log_anchor + a / beta)


def exact_iterations(
    problem: Problem,
    variant: str,
    beta: float,
    eps: float,
    n_iter: int,
    alpha: float | None = None,
    log_pi0: np.ndarray | None = None,
) -> dict:
    """Closed-form iterates pi_0..pi_n (pi_0 = pi_ref unless log_pi0 is given).

    Returns log_pi (n+1, Q, K), p (n+1, Q) and delta_r (n, Q) (Delta_R of step n; zeros unless
    two-KL)."""
    v = reg.get(variant)
    two_kl = v.two_kl
    log_pi = problem.log_pi_ref if log_pi0 is None else log_pi0
    out = np.empty((n_iter + 1,) + problem.shape)
    dr = np.zeros((n_iter, problem.shape[0]))
    out[0] = log_pi
    for n in range(1, n_iter + 1):
        p_prev = pos(log_pi, problem.reward)
        if two_kl:
            dr[n - 1] = delta_r(problem.log_pi_ref, log_pi, problem.reward, alpha)
        anchor = anchor_of(variant, problem.log_pi_ref, log_pi, alpha)
        log_pi = gibbs_step(anchor, problem.reward, p_prev, beta, eps, v)
        out[n] = log_pi
    return dict(log_pi=out, p=pos(out, problem.reward), delta_r=dr)


def scalar_pos(
    problem: Problem,
    variant: str,
    beta: float,
    eps: float,
    n_iter: int,
    alpha: float | None = None,
    p0: np.ndarray | None = None,
    delta_r_seq: np.ndarray | None = None,
) -> np.ndarray:
    """The scalar recurrence of `variant` for every prompt (n+1, Q), Delta_R supplied per step."""
    dr = 0.0 if delta_r_seq is None else delta_r_seq
    return dyn.recurrence(
        variant,
        problem.p_ref,
        beta,
        eps,
        n_iter,
        p0=problem.p_ref if p0 is None else p0,
        alpha=alpha,
        delta_r=dr,
    )


# ------------------------------------------------------------- independent optimiser (Newton)
def objective(pi: np.ndarray, adv: np.ndarray, kl_terms, beta: float) -> np.ndarray:
    """Per-prompt J(pi) = E_pi a - beta sum_j c_j KL(pi || anchor_j) (the paper's objective)."""
    with np.errstate(divide="ignore"):
        lp = np.log(pi)
    val = np.sum(pi * adv, axis=-1)
    for c, la in kl_terms:
        val = val - beta * c * np.sum(np.where(pi > 0, pi * (lp - la), 0.0), axis=-1)
    return val


def maximise_objective(
    adv: np.ndarray, kl_terms, beta: float, pi0: np.ndarray, tol: float = 1e-26, max_iter: int = 500
) -> np.ndarray:
    """argmax over the simplex of J(pi) (strictly concave), every prompt at once, by damped Newton
    with the equality constraint sum pi = 1 (exact Hessian -beta sum_j c_j diag(1/pi)),
    a fraction-to-boundary rule keeping pi > 0 (entries below 1e-200, which weigh nothing in
    J or in L1, are floored at the smallest normal float instead) and backtracking on J.
    Returns log pi."""
    pi = pi0.copy()
    csum = sum(c for c, _ in kl_terms)
    steps = 0.5 ** np.arange(60)
    rows = np.arange(pi.shape[0])
    for _ in range(max_iter):
        lp = np.log(pi)
        grad = adv.copy()
        for c, la in kl_terms:
            grad = grad - beta * c * (lp - la + 1.0)
        nu = np.sum(pi * grad, axis=-1, keepdims=True)  # multiplier of sum pi = 1
        d = pi * (grad - nu) / (beta * csum)  # Newton step, sum d = 0
        decrement = np.sum(d * (grad - nu), axis=-1)  # Newton decrement^2 (>= 0)
        if np.max(decrement) <= tol:
            break
        with np.errstate(
            divide="ignore", invalid="ignore"
        ):  # entries below 1e-200 may hit the floor
            room = np.where((d < 0) & (pi > 1e-200), -pi / d, np.inf).min(axis=-1)
        t_max = np.minimum(1.0, 0.99 * room)
        cand = pi[None] + (steps[:, None] * t_max[None])[..., None] * d[None]
        cand = np.maximum(cand, np.finfo(float).tiny)
        cand = cand / cand.sum(axis=-1, keepdims=True)
        val = objective(pi, adv, kl_terms, beta)
        vals = objective(cand, adv, kl_terms, beta)  # (steps, Q)
        ok = vals >= val[None] - 1e-15 * (1 + np.abs(val[None]))
        first = np.where(ok.any(axis=0), ok.argmax(axis=0), len(steps) - 1)
        pi = np.where((decrement > tol)[:, None], cand[first, rows], pi)
    return np.log(pi)


def optimiser_iterations(
    problem: Problem,
    variant: str,
    beta: float,
    eps: float,
    n_iter: int,
    alpha: float | None = None,
    log_pi0: np.ndarray | None = None,
) -> np.ndarray:
    """Iterates of the independent optimiser, chained on its own previous iterate and PoS
    (log pi, shape (n+1, Q, K)); never uses the closed form."""
    v = reg.get(variant)
    log_pi = problem.log_pi_ref if log_pi0 is None else log_pi0
    out = np.empty((n_iter + 1,) + problem.shape)
    out[0] = log_pi
    for n in range(1, n_iter + 1):
        p_prev = pos(log_pi, problem.reward)
        adv = advantage_table(problem.reward, p_prev, eps, v)
        terms = v.kl_terms(problem.log_pi_ref, log_pi, alpha)
        log_pi = maximise_objective(adv, terms, beta, pi0=np.exp(log_pi))
        out[n] = log_pi
    return out


def l1_distance(log_p: np.ndarray, log_q: np.ndarray) -> np.ndarray:
    """sum_o |p(o) - q(o)| per prompt (axis -1); TV = L1 / 2."""
    return np.sum(np.abs(np.exp(log_p) - np.exp(log_q)), axis=-1)


def tv(log_p: np.ndarray, log_q: np.ndarray) -> np.ndarray:
    return 0.5 * orc.l1_distance(log_p, log_q)


def one_step_targets(problem, log_pi_sgd, variant, beta, eps, alpha=None) -> np.ndarray:
    """T pi~_{n-1} for n = 1..N (N, Q, K): the exact update applied to the parametric iterate."""
    v = reg.get(variant)
    out = np.empty((len(log_pi_sgd) - 1,) + problem.shape)
    for n in range(1, len(log_pi_sgd)):
        prev = log_pi_sgd[n - 1]
        anchor = orc.anchor_of(variant, problem.log_pi_ref, prev, alpha)
        p_prev = orc.pos(prev, problem.reward)
        out[n - 1] = orc.gibbs_step(anchor, problem.reward, p_prev, beta, eps, v)
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
