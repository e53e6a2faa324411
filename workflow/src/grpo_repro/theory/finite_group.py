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
- fg.brute_force_weights (numeric): w+_G, w-_G (whitened and mean-only) equal a brute-force
  enumeration of the 2^G reward vectors of a group (G = 2..10), each sample's advantage computed
  by the trainer's own function (grpo_repro.train.trl_variant.paper_advantage, on torch tensors);
- fg.oracle_stationary (numeric): on a free softmax policy over K = 3-4 outcomes the expected GRPO
  gradient (the expectation over all K^G groups computed exactly, G = 4-6, advantages from each
  group's own statistics by paper_advantage, stop-gradient, plus beta grad KL(pi || pi_ref), the
  theory's KL of docs/theory.md Sec. 7) is driven to zero; its PoS is the stable p*_G reached from
  p_ref (dynamics.fixed_points with group_size) and is NOT the population p*.
"""

from __future__ import annotations

import itertools

import numpy as np
import sympy as sp
from scipy.optimize import fsolve
from scipy.special import expit

from grpo_repro import variants as reg
from grpo_repro.dynamics import finite_group as fg
from grpo_repro.dynamics import fixed_points as fxp
from grpo_repro.dynamics import kl_estimators as kle
from grpo_repro.dynamics import maps as dyn
from grpo_repro.dynamics import prediction as prd

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
#: the library's records of the paper's two advantages: eq. (4)'s whitened one (grpo) and Dr. GRPO's
#: mean-only one (Sec. 5); the brute-force references below take the choice as the theory states it
GRPO, DR_GRPO = reg.get("grpo"), reg.get("dr_grpo")

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
        w_p, w_m = fg.weights(pi, int(gi), ctx.smoothing_eps, DR_GRPO)
        x_prev = np.log(pi) - np.log1p(-pi)
        step = dyn.step_logit("dr_grpo", x_prev, ri, bi, ctx.smoothing_eps, group_size=int(gi))
        law = np.log(ri) - np.log1p(-ri) + c / bi
        again = dyn.step_logit("dr_grpo", law, ri, bi, ctx.smoothing_eps, group_size=int(gi))
        errs += [abs(w_p - c * (1 - pi)), abs(w_m - c * pi), abs(step - law), abs(again - law)]
    return numeric_outcome(
        np.array(errs),
        ctx.tol,
        "|w+_G - (1-1/G)(1-p)|, |w-_G - (1-1/G) p| (finite_group.weights, dr_grpo) and the "
        "logit error of step_logit('dr_grpo', group_size=G) from p and from the law's p*_G vs "
        "logit p_ref + (1-1/G)/beta, G in 2..4096",
        n,
    )


# ----------------------------------------------------------------------------- brute force


def trainer_advantages(reward: np.ndarray, eps: float, mean_only: bool) -> np.ndarray:
    """Advantages of groups (rows of `reward`, shape (n, G)) as the trainer computes them: TRL's
    A0 = r - mean of the group, rescaled by grpo_repro.train.trl_variant.paper_advantage (eq. 4 at the
    group's own p_hat, biased spread) unless mean_only (Dr. GRPO: TRL's scale_rewards none)."""
    import torch

    from grpo_repro.train.trl_variant import paper_advantage

    r = torch.as_tensor(reward, dtype=torch.float64)
    adv0 = (r - r.mean(dim=1, keepdim=True)).reshape(-1)
    out = adv0 if mean_only else paper_advantage(adv0, r.shape[1], eps)
    return out.reshape(r.shape).numpy()


def brute_force_weights(pp: np.ndarray, g: int, eps: float, mean_only: bool):
    """(w+_G, w-_G) at each p by enumerating the 2^G reward vectors of a group: E[A_i r_i] / p and
    -E[A_i (1 - r_i)] / (1-p), averaged over the G samples i (exchangeable)."""
    r = np.array(list(itertools.product((0.0, 1.0), repeat=g)))
    a = trainer_advantages(r, eps, mean_only)
    k = r.sum(axis=1)
    prob = pp[:, None] ** k * (1 - pp[:, None]) ** (g - k)  # (n_p, 2^G)
    succ = (a * r).sum(axis=1) / g
    fail = (a * (1 - r)).sum(axis=1) / g
    return prob @ succ / pp, -(prob @ fail) / (1 - pp)


@register(
    "fg.brute_force_weights",
    "w+_G, w-_G (whitened and mean-only) equal the conditional means of the advantage over an "
    "enumeration of all 2^G reward vectors of a group (G = 2..10), each advantage computed by the "
    "trainer's paper_advantage from the group's own mean and biased spread",
    "docs/theory.md Sec. 8; Sec. 2.3, eq. (4)",
    SEC,
)
def brute_force(ctx: Context, max_g: int = BRUTE_MAX_G) -> Outcome:
    rng = ctx.rng
    n_p = max(5, ctx.n_random // (4 * (max_g - 1)))
    errs, n_pts = [], 0
    for g in range(2, max_g + 1):
        for eps in (ctx.smoothing_eps, float(log_uniform(rng, 1e-4, 0.1, 1)[0])):
            pp = rng.uniform(0.01, 0.99, n_p)
            for v, mean_only in ((GRPO, False), (DR_GRPO, True)):
                got = fg.weights(pp, g, eps, v)
                ref = brute_force_weights(pp, g, eps, mean_only)
                errs += [np.abs(x - y) / np.maximum(1, np.abs(y)) for x, y in zip(got, ref)]
                n_pts += n_p
    return numeric_outcome(
        np.concatenate(errs),
        ctx.tol,
        "relative error of finite_group.weights (whitened and mean-only) vs the 2^G enumeration "
        f"with paper_advantage, G = 2..{max_g}, eps = {ctx.smoothing_eps:g} and a random eps in "
        "[1e-4, 0.1]",
        n_pts,
    )


# ----------------------------------------------------------------------------- oracle


def _prompt(rng, k: int):
    """A random prompt with K outcomes, >= 1 success and >= 1 failure, p_ref in [0.05, 0.9]."""
    while True:
        reward = np.zeros(k)
        reward[rng.choice(k, size=int(rng.integers(1, k)), replace=False)] = 1.0
        log_ref = kle.log_softmax(rng.normal(0, 1.5, k))
        if 0.05 <= float(np.exp(log_ref) @ reward) <= 0.9:
            return log_ref, reward


class ExpectedUpdate:
    """Expected GRPO update of a free softmax policy on one prompt at group size G: the mean over
    all K^G groups o_1..o_G ~ pi (exact sum) of (1/G) sum_i A_i grad log pi(o_i), A from each
    group's own statistics (trainer_advantages, stop-gradient), minus beta grad KL(pi || pi_ref)."""

    def __init__(self, log_ref, reward, g: int, beta_: float, eps: float, mean_only: bool):
        self.log_ref, self.g, self.beta = log_ref, g, beta_
        self.groups = np.array(list(itertools.product(range(len(reward)), repeat=g)))
        self.adv = trainer_advantages(reward[self.groups], eps, mean_only)

    def advantage_mass(self, theta) -> np.ndarray:
        """c(o) = E[(1/G) sum_i A_i 1{o_i = o}] = pi(o) E[A_1 | o_1 = o]."""
        lp = kle.log_softmax(theta)
        prob = np.exp(lp[self.groups].sum(axis=1))
        w = (prob[:, None] * self.adv).ravel() / self.g
        return np.bincount(self.groups.ravel(), weights=w, minlength=len(self.log_ref))

    def field(self, theta) -> np.ndarray:
        """The expected gradient (grad log pi(o) = e_o - pi)."""
        c = self.advantage_mass(theta)
        pi = np.exp(kle.log_softmax(theta))
        return c - pi * c.sum() - self.beta * kle.grad_kl_forward(theta, self.log_ref)

    def gibbs_target(self, theta) -> np.ndarray:
        """log pi_ref + E[A | o]/beta: where the field vanishes iff theta equals it up to a constant."""
        c = self.advantage_mass(theta)
        return self.log_ref + c / np.exp(kle.log_softmax(theta)) / self.beta


def stationary_pos(log_ref, reward, g: int, beta_: float, eps: float, mean_only: bool):
    """(PoS, max |gradient|) at the zero of the expected update reached from pi_ref: damped
    fixed-point iteration theta <- (theta + gibbs_target(theta))/2 from log pi_ref (the exact GRPO
    iteration, halved), then Newton's polish (fsolve, softmax gauge theta_K = 0)."""
    up = ExpectedUpdate(log_ref, reward, g, beta_, eps, mean_only)
    theta = log_ref.copy()
    for _ in range(2000):
        new = kle.log_softmax(0.5 * (theta + up.gibbs_target(theta)))
        done = np.max(np.abs(new - theta)) < 1e-13
        theta = new
        if done:
            break
    t0 = theta[:-1] - theta[-1]
    t = fsolve(lambda u: up.field(np.append(u, 0.0))[:-1], t0, xtol=1e-14, full_output=True)[0]
    theta = np.append(t, 0.0)
    return float(np.exp(kle.log_softmax(theta)) @ reward), float(np.max(np.abs(up.field(theta))))


def stable_limit(p_ref_, beta_, eps: float, g: int | None, n_iter: int = 400) -> np.ndarray:
    """The stable fixed point of h_G (g None: h) that the orbit from p_ref reaches, refined by
    dynamics.fixed_points (nan where the orbit does not settle on a stable fixed point)."""
    lim = prd.orbit_limits(p_ref_, beta_, eps, n_iter=n_iter, group_size=g)
    out = np.full(len(p_ref_), np.nan)
    for i, (kind, a) in enumerate(zip(lim["kind"], lim["a"])):
        fps = [f for f in fxp.fixed_points(beta_[i], p_ref_[i], eps, group_size=g) if f.stable]
        if kind == "fixed_point" and fps:
            near = min(fps, key=lambda f: abs(f.p_star - a))
            out[i] = near.p_star if abs(near.p_star - a) < 1e-6 else np.nan
    return out


@register(
    "fg.oracle_stationary",
    "On a free softmax policy (K = 3-4 outcomes) the expected GRPO update at group size G = 4-6 "
    "(exact expectation over all K^G groups, advantages from each group's own statistics by the "
    "trainer's paper_advantage, plus beta grad KL(pi || pi_ref)) vanishes exactly where the PoS "
    "is the stable p*_G of h_G reached from p_ref (Dr. GRPO: logit p_ref + (1-1/G)/beta), which "
    "differs from the population p*",
    "docs/theory.md Sec. 7-8; Thm 1-2",
    SEC,
)
def oracle_stationary(ctx: Context, n_cases: int = 50) -> Outcome:
    rng, eps = ctx.rng, ctx.smoothing_eps
    k, g = rng.integers(3, 5, n_cases), rng.integers(4, 7, n_cases)
    dr = np.arange(n_cases) % 5 == 4  # every 5th case: Dr. GRPO (mean-only)
    b = log_uniform(rng, 1.5, 6, n_cases)
    p_stat, grad, pr = (np.empty(n_cases) for _ in range(3))
    for i in range(n_cases):
        log_ref, reward = _prompt(rng, int(k[i]))
        pr[i] = np.exp(log_ref) @ reward
        p_stat[i], grad[i] = stationary_pos(log_ref, reward, int(g[i]), b[i], eps, bool(dr[i]))
    l_ref = np.log(pr) - np.log1p(-pr)
    p_g = expit(l_ref + (1 - 1 / g) / b)  # Dr. GRPO: fg.dr_weights' closed form
    p_pop = expit(l_ref + 1 / b)
    for gg in (4, 5, 6):
        m = (g == gg) & ~dr
        p_g[m] = stable_limit(pr[m], b[m], eps, gg)
    p_pop[~dr] = stable_limit(pr[~dr], b[~dr], eps, None)
    err = np.maximum(np.abs(p_stat - p_g), np.where(grad < 1e-12, 0.0, np.inf))
    gap = np.abs(p_stat - p_pop)
    out = numeric_outcome(
        err,
        ctx.tol,
        "|PoS of the zero of the exact expected gradient - p*_G| (a residual gradient >= 1e-12 "
        f"counts as a failure), {n_cases} random prompts (K = 3-4, G = 4-6, beta in [1.5, 6], "
        f"p_ref in [0.05, 0.9], every 5th Dr. GRPO), eps = {eps:g}",
        n_cases,
    )
    ok = out.passed and bool(np.min(gap) >= DISCRIMINATION)
    ex = [
        f"K = {k[i]}, G = {g[i]}{' (Dr.)' if dr[i] else ''}, p_ref = {pr[i]:.4f}, beta = "
        f"{b[i]:.3f}: stationary PoS {p_stat[i]:.10f}, p*_G {p_g[i]:.10f}, p* {p_pop[i]:.10f}"
        for i in (0, 4)
    ]
    return Outcome(
        ok,
        "numeric",
        out.detail + f"; max residual gradient {np.max(grad):.2g}; |PoS - population p*| >= "
        f"{np.min(gap):.3g} (must be >= {DISCRIMINATION:g}); e.g. " + "; ".join(ex),
        n_cases,
    )
