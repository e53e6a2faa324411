"""docs/theory.md Sec. 7 (not in the paper): from the theory's KL(pi || pi_ref) to TRL's k3 estimator.

On a K-outcome softmax pi_theta with samples o ~ pi_theta and r = pi_ref/pi_theta:
- kl.k3_plain_is_reverse: E_pi[grad k3] = E_pi[(1 - r) grad log pi] = grad KL(pi_ref || pi)
  (sympy, K = 3, symbolic logits and reference);
- kl.k3_ratio_is_forward: E_{pi_old}[grad (pi_theta/pi_old) k3] at pi_old = pi_theta
  = E_pi[log(pi/pi_ref) grad log pi] = grad KL(pi || pi_ref) (sympy, K = 3);
- kl.k3_plain_not_forward: the plain gradient is not grad KL(pi || pi_ref) (interval-certified
  counterexample at rational pi, pi_ref);
- kl.k3_identities_numeric: grpo_repro.dynamics.kl_estimators (per-sample complex-step gradients,
  exact expectation) against complex-step gradients of the closed-form KLs, K in 2..8.
The per-sample gradient is the autograd one: samples fixed, pi_old held constant (stop-gradient).
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from grpo_repro.dynamics import kl_estimators as kle

from .core import Context, Outcome, is_zero, iv_function, numeric_outcome, register

SEC = "docs/theory.md Sec. 7"
K = 3


def softmax_policy(t):
    z = sum(sp.exp(x) for x in t)
    return [sp.exp(x) / z for x in t]


def k3_expr(pi_o, ref_o):
    """TRL's per-sample estimator of KL(pi || pi_ref): r - 1 - log r, r = pi_ref/pi."""
    r = ref_o / pi_o
    return r - 1 - sp.log(r)


def kl_expr(p, q):
    return sum(x * sp.log(x / y) for x, y in zip(p, q))


def _symbols():
    t = sp.symbols(f"t1:{K + 1}", real=True)
    s = sp.symbols(f"s1:{K + 1}", real=True)  # logits of pi_old (stop-gradient copy)
    ref = list(sp.symbols(f"q1:{K}", positive=True))
    ref.append(1 - sum(ref))
    return t, s, ref


def plain_grad(t, ref):
    """E_{o ~ pi}[d k3(o) / d t_j] (samples fixed): list over j."""
    pi = softmax_policy(t)
    return [sum(pi[o] * sp.diff(k3_expr(pi[o], ref[o]), tj) for o in range(K)) for tj in t]


def ratio_grad(t, s, ref):
    """E_{o ~ pi_old}[d (pi_theta(o)/pi_old(o)) k3(o) / d t_j], then pi_old = pi_theta."""
    pi, old = softmax_policy(t), softmax_policy(s)
    loss = [pi[o] / old[o] * k3_expr(pi[o], ref[o]) for o in range(K)]
    g = [sum(old[o] * sp.diff(loss[o], tj) for o in range(K)) for tj in t]
    return [x.subs(dict(zip(s, t))) for x in g]


def _same(a, b) -> bool:
    return all(is_zero(sp.expand_log(x - y, force=True)) for x, y in zip(a, b))


@register(
    "kl.k3_plain_is_reverse",
    "Plain k3 = r - 1 - log r on samples from pi (r = pi_ref/pi): E_pi[grad k3] = "
    "E_pi[(1 - r) grad log pi] = grad KL(pi_ref || pi), the REVERSE KL",
    "docs/theory.md Sec. 7",
    SEC,
)
def k3_plain_is_reverse(ctx: Context) -> Outcome:
    t, _, ref = _symbols()
    pi = softmax_policy(t)
    target = [sp.diff(kl_expr(ref, pi), tj) for tj in t]
    ok = _same(plain_grad(t, ref), target)
    return Outcome(
        ok,
        "symbolic",
        f"K={K} softmax, symbolic logits and normalised pi_ref: sum_o pi(o) d k3(o)/d theta_j "
        "minus d KL(pi_ref || pi_theta)/d theta_j reduces to 0 for every j",
    )


@register(
    "kl.k3_ratio_is_forward",
    "k3 times pi_theta/pi_old (TRL use_bias_correction_kl) at pi_old = pi: "
    "E_pi[log(pi/pi_ref) grad log pi] = grad KL(pi || pi_ref), the theory's KL",
    "docs/theory.md Sec. 7",
    SEC,
)
def k3_ratio_is_forward(ctx: Context) -> Outcome:
    t, s, ref = _symbols()
    pi = softmax_policy(t)
    target = [sp.diff(kl_expr(pi, ref), tj) for tj in t]
    ok = _same(ratio_grad(t, s, ref), target)
    return Outcome(
        ok,
        "symbolic",
        f"K={K} softmax, pi_old a stop-gradient copy (own logits, set equal after "
        "differentiation): the expected gradient minus d KL(pi_theta || pi_ref)/d theta_j "
        "reduces to 0 for every j",
    )


#: rational pi and pi_ref of the counterexample (theta = log pi)
COUNTER = ((sp.Rational(1, 2), sp.Rational(1, 3), sp.Rational(1, 6)), (sp.Rational(1, 3),) * 3)


@register(
    "kl.k3_plain_not_forward",
    "The plain k3 gradient is not grad KL(pi || pi_ref): at pi = (1/2, 1/3, 1/6), "
    "pi_ref uniform they differ",
    "docs/theory.md Sec. 7",
    SEC,
)
def k3_plain_not_forward(ctx: Context) -> Outcome:
    t, _, _ = _symbols()
    pi_vals, ref_vals = COUNTER
    pi = softmax_policy(t)
    diff = [
        g - sp.diff(kl_expr(pi, list(ref_vals)), tj) for g, tj in zip(plain_grad(t, ref_vals), t)
    ]
    at = {tj: sp.log(v) for tj, v in zip(t, pi_vals)}
    from mpmath import iv

    encl = [iv.mpf(iv_function(d.subs(at), (), 50)()) for d in diff]  # 0 stays [0, 0]
    ok = any(e.a > 0 or e.b < 0 for e in encl)
    return Outcome(
        ok,
        "exact",
        "plain minus forward gradient at theta = log(1/2, 1/3, 1/6), pi_ref = (1/3, 1/3, 1/3): "
        f"interval enclosures {', '.join(f'{float(e.mid):.4f}' for e in encl)} (certified "
        "nonzero): the plain estimator does not regularise towards the Gibbs policy",
    )


def _cs_grad(f, theta):
    """Complex-step gradient of a scalar function of the logits."""
    out = np.empty(theta.size)
    for j in range(theta.size):
        e = np.zeros(theta.size, complex)
        e[j] = 1e-30j
        out[j] = f(theta + e).imag / 1e-30
    return out


@register(
    "kl.k3_identities_numeric",
    "dynamics.kl_estimators: plain k3 gradient = grad KL(pi_ref||pi), ratio-corrected = "
    "grad KL(pi||pi_ref), against complex-step gradients of the closed-form KLs, K in 2..8",
    "docs/theory.md Sec. 7",
    SEC,
)
def k3_identities_numeric(ctx: Context) -> Outcome:
    rng, n = ctx.rng, ctx.n_random
    errs, gaps = np.empty(2 * n), np.empty(n)
    for i in range(n):
        k = int(rng.integers(2, 9))
        theta, log_ref = rng.normal(0, 1.5, k), kle.log_softmax(rng.normal(0, 1.5, k))

        def fwd(th, log_ref=log_ref):
            lp = kle.log_softmax(th)
            return np.sum(np.exp(lp) * (lp - log_ref))

        def rev(th, log_ref=log_ref):
            return np.sum(np.exp(log_ref) * (log_ref - kle.log_softmax(th)))

        g_fwd, g_rev = _cs_grad(fwd, theta), _cs_grad(rev, theta)
        plain, corr = (kle.estimator_grad(theta, log_ref, ratio=r) for r in (False, True))
        errs[2 * i] = np.max(np.abs(plain - g_rev)) / max(1, np.max(np.abs(g_rev)))
        errs[2 * i + 1] = np.max(np.abs(corr - g_fwd)) / max(1, np.max(np.abs(g_fwd)))
        gaps[i] = np.max(np.abs(plain - g_fwd))
    out = numeric_outcome(errs, ctx.tol, "max |estimator gradient - closed-form gradient|", n)
    return Outcome(
        out.passed,
        "numeric",
        out.detail + f"; the plain gradient misses grad KL(pi||pi_ref) by {np.median(gaps):.3f} "
        f"(median of the max abs difference; max {np.max(gaps):.3f})",
        n,
    )
