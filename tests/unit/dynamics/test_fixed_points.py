"""grpo_repro.dynamics.fixed_points: every fixed point of h (Thm 2, Prop. 1), amplification p* > p_ref
(Thm 3), stability |h'(p*)| < 1 (Thm 6), the other variants' fixed points (Sec. 5, Thm 9), 2-cycles."""

import math

import numpy as np
import pytest
from scipy.special import expit, logit

from grpo_repro.dynamics import fixed_points as fxp
from grpo_repro.dynamics import maps as dyn

EPS = 1e-5


def brute_force_count(beta, p_ref, eps, n=400_000):
    """Sign changes of H(x) - x on a uniform logit grid (an independent count of the roots)."""
    l_ref = logit(p_ref)
    lo = l_ref + 2 / (beta * math.sqrt(1 + 4 * eps)) - 1e-3
    hi = min(l_ref + 1 / (beta * math.sqrt(eps)) + 1e-3, 80.0)
    x = np.linspace(lo, hi, n)
    f = l_ref + dyn.omega_logit(x, eps) / beta - x
    extra = 1 if hi == 80.0 else 0  # the root beyond 80 (p* = 1 numerically), F(80) > 0 there
    return int(np.sum(np.sign(f[:-1]) != np.sign(f[1:]))) + (extra if f[-1] > 0 else 0)


CASES = [
    (5.0, 0.001, 1e-5),
    (1.0, 0.2, 1e-5),
    (0.01, 0.8, 1e-5),
    (0.2, 0.2, 1e-2),
    (1.0, 1e-4, 1e-2),
    (100.0, 0.3, 1e-5),
    (0.5, 0.05, 1e-3),
    (3.0, 0.01, 1e-4),
]


@pytest.mark.parametrize("beta,p_ref,eps", CASES)
def test_all_fixed_points_found(beta, p_ref, eps):
    fps = fxp.fixed_points(beta, p_ref, eps)
    assert len(fps) == brute_force_count(beta, p_ref, eps)
    for fp in fps:
        assert fp.residual <= 1e-12
        assert abs(dyn.h(fp.p_star, p_ref, beta, eps) - fp.p_star) <= 1e-12
        assert fp.p_star > p_ref  # Thm 3
        assert fp.stable == (abs(fp.h_prime) < 1)


def test_random_parameters_residual_and_amplification():
    rng = np.random.default_rng(1)
    counts = set()
    for _ in range(200):
        beta, p_ref, eps = (
            10 ** rng.uniform(-2, 1.5),
            expit(rng.uniform(-9, 5)),
            10 ** rng.uniform(-6, -1),
        )
        fps = fxp.fixed_points(beta, p_ref, eps)
        counts.add(len(fps))
        assert len(fps) % 2 == 1  # F goes from + to -: an odd number of transversal roots
        assert all(fp.residual <= 1e-12 and fp.p_star > p_ref for fp in fps)
        # h' at the fixed point equals -sign(1-2p) B(p*)/beta (Thm 6)
        for fp in fps:
            if fp.p_star < 1 - 1e-9:
                assert abs(fp.h_prime) == pytest.approx(
                    dyn.B(fp.p_star, eps) / beta, rel=1e-7, abs=1e-300
                )
    assert {1, 3} <= counts  # both unique and multiple fixed points occur


def test_boundaries_and_limits():
    assert [fp.p_star for fp in fxp.fixed_points(1.0, 0.0, EPS)] == [0.0]  # p_ref = 0: absorbing
    assert [fp.p_star for fp in fxp.fixed_points(1.0, 1.0, EPS)] == [1.0]
    # large beta: a unique fixed point just above p_ref
    (fp,) = fxp.fixed_points(1e4, 0.3, EPS)
    assert 0.3 < fp.p_star < 0.3 + 1e-3 and fp.stable
    # small beta: p* = 1 (numerically), stable
    (fp,) = fxp.fixed_points(0.01, 0.8, EPS)
    assert fp.p_star == 1.0 and fp.stable and fp.logit_p_star > 1e4
    with pytest.raises(ValueError):
        fxp.fixed_points(1.0, 0.3, 0.0)  # eps = 0: h discontinuous, no guarantee


def test_variant_fixed_points_closed_forms():
    p_ref, beta = 0.2, 0.7
    (dr,) = fxp.variant_fixed_points("dr_grpo", beta, p_ref, EPS)
    assert dr.p_star == pytest.approx(expit(logit(p_ref) + 1 / beta), rel=1e-14)
    assert dyn.recurrence("dr_grpo", p_ref, beta, EPS, 1)[1] == pytest.approx(dr.p_star, rel=1e-14)
    alpha, d = 0.4, 0.05
    (tk,) = fxp.variant_fixed_points("two_kl_dr", beta, p_ref, EPS, alpha=alpha, delta_r=d)
    seq = dyn.recurrence("two_kl_dr", p_ref, beta, EPS, 200, alpha=alpha, delta_r=d)
    assert seq[-1] == pytest.approx(tk.p_star, rel=1e-12) and tk.h_prime == pytest.approx(1 - alpha)
    for fp in fxp.variant_fixed_points("two_kl", 3.0, p_ref, EPS, alpha=alpha, delta_r=d):
        x = fp.logit_p_star
        step = dyn.step_logit("two_kl", x, p_ref, 3.0, EPS, alpha=alpha, delta_r=d)
        assert step == pytest.approx(x, abs=1e-9)
    with pytest.raises(ValueError):
        fxp.variant_fixed_points("mirror", beta, p_ref, EPS)


def test_stable_fixed_point_attracts_its_neighbourhood():
    for fp in fxp.fixed_points(1.0, 0.2, EPS):
        if fp.stable and fp.p_star < 0.99:
            seq = dyn.iterate_h(fp.p_star + 1e-3, 0.2, 1.0, EPS, 200)
            assert seq[-1] == pytest.approx(fp.p_star, abs=1e-10)


def test_paper_divergent_example_is_a_stable_two_cycle():
    beta, p_ref, eps = 5.0, 0.001, 1e-5
    fps = fxp.fixed_points(beta, p_ref, eps)
    low = min(fps, key=lambda f: f.p_star)
    assert not low.stable and low.h_prime < -1  # period-doubling side
    (cyc,) = fxp.two_cycles(beta, p_ref, eps)
    assert cyc.stable and cyc.residual <= 1e-12
    assert cyc.p_a == pytest.approx(0.0023380, rel=1e-4) and cyc.p_b == pytest.approx(
        0.0587158, rel=1e-4
    )
    assert dyn.h(cyc.p_a, p_ref, beta, eps) == pytest.approx(cyc.p_b, rel=1e-10)
    # multiplier = derivative of h o h at a
    d = 1e-7
    hh = lambda p: dyn.h(dyn.h(p, p_ref, beta, eps), p_ref, beta, eps)  # noqa: E731
    assert cyc.multiplier == pytest.approx((hh(cyc.p_a + d) - hh(cyc.p_a - d)) / (2 * d), rel=1e-4)
    # the iteration from p_ref ends on the cycle
    tail = dyn.iterate_h(p_ref, p_ref, beta, eps, 3000)[-2:]
    assert sorted(tail) == pytest.approx([cyc.p_a, cyc.p_b], rel=1e-8)


def test_no_two_cycle_where_h_contracts():
    assert fxp.two_cycles(100.0, 0.3, EPS) == []
    assert fxp.two_cycles(1.0, 0.0, EPS) == []


@pytest.mark.parametrize(
    "beta,p_ref,alpha,d", [(3.0, 0.2, 0.4, 0.05), (0.5, 0.01, 0.7, 0.0), (5.0, 0.001, 0.3, -0.1)]
)
def test_two_kl_fixed_point_derivative_matches_finite_differences(beta, p_ref, alpha, d):
    """d x_n / d x_{n-1} of the Thm 9 map at x* (= (1-alpha) + alpha h'_{alpha beta}(p*)), by central
    differences of dynamics.maps.step_logit; also in p coordinates (conjugation)."""
    fps = fxp.variant_fixed_points("two_kl", beta, p_ref, EPS, alpha=alpha, delta_r=d)
    assert fps
    for fp in fps:
        x = fp.logit_p_star
        if abs(x) > 30:
            continue
        h = 1e-6 * (1 + abs(x))

        def step(z):
            return float(dyn.step_logit("two_kl", z, p_ref, beta, EPS, alpha=alpha, delta_r=d))

        assert step(x) == pytest.approx(x, abs=1e-9)
        fd = (step(x + h) - step(x - h)) / (2 * h)
        assert fp.h_prime == pytest.approx(fd, rel=1e-6, abs=1e-8)
        assert fp.stable == (abs(fd) < 1)
        hp = 1e-7 * min(fp.p_star, 1 - fp.p_star)

        def step_p(q):
            return float(expit(step(logit(q))))

        fd_p = (step_p(fp.p_star + hp) - step_p(fp.p_star - hp)) / (2 * hp)
        assert fp.h_prime == pytest.approx(fd_p, rel=1e-4, abs=1e-7)
