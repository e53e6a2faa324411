"""grpo_repro.dynamics.finite_group (docs/theory.md Sec. 8) against closed-form truths:
Dr. GRPO's (G-1)/G law, the ends Omega_G(0) and Omega_G(1), G = 2 by hand, the exact derivative
against central differences, and h_G / p*_G through maps and fixed_points."""

import math

import numpy as np
import pytest
from scipy.special import expit

from grpo_repro import variants as reg
from grpo_repro.dynamics import finite_group as fg
from grpo_repro.dynamics import fixed_points as fxp
from grpo_repro.dynamics import maps as dyn

EPS = 1e-5
DR = reg.get("dr_grpo")  # the mean-only advantage (Sec. 5)


@pytest.mark.parametrize("g", [2, 3, 8, 64, 4096])
def test_dr_weights_are_g_minus_1_over_g_times_population(g):
    p = np.linspace(0.0, 1.0, 101)
    w_p, w_m = fg.weights(p, g, EPS, DR)
    c = (g - 1) / g
    tol = 1e-11  # rounding of a sum of G Binomial terms (~2e-12 at G = 4096)
    assert np.max(np.abs(w_p - c * (1 - p))) < tol
    assert np.max(np.abs(w_m - c * p)) < tol
    assert np.max(np.abs(fg.omega(p, g, EPS, DR) - c)) < tol


def test_g2_by_hand():
    """G = 2: a success paired with a failure (prob 1-p) has p_hat = 1/2, advantage
    (1/2)/sqrt(1/4 + eps); paired with a success it has 0. So w+_2 = (1-p) a, w-_2 = p a."""
    p = np.array([0.1, 0.5, 0.9])
    a = 0.5 / math.sqrt(0.25 + EPS)
    w_p, w_m = fg.weights(p, 2, EPS)
    assert np.allclose(w_p, (1 - p) * a, rtol=0, atol=1e-14)
    assert np.allclose(w_m, p * a, rtol=0, atol=1e-14)
    assert np.allclose(fg.omega(p, 2, EPS), a, rtol=0, atol=1e-14)


@pytest.mark.parametrize("g", [2, 4, 8, 16])
def test_ends_are_a_lone_success_and_a_lone_failure(g):
    """p -> 0: the other G-1 samples fail, a success has p_hat = 1/G; p -> 1 symmetrically. Finite,
    where Omega(0) = Omega(1) = 1/sqrt(eps)."""
    q = 1 / g
    lone = (1 - q) / math.sqrt(q * (1 - q) + EPS)
    assert abs(fg.omega(0.0, g, EPS) - lone) < 1e-12
    assert abs(fg.omega(1.0, g, EPS) - lone) < 1e-12
    assert abs(fg.omega_logit(-40.0, g, EPS) - lone) < 1e-10  # exact in logits near the ends
    w_p0, w_m0 = fg.weights(0.0, g, EPS)
    assert abs(w_p0 - lone) < 1e-12 and w_m0 == 0.0
    assert fg.omega_max(g, EPS) >= lone


def test_omega_g_is_symmetric_and_below_omega():
    p = np.linspace(0.01, 0.99, 99)
    for g in (3, 8, 33):
        assert np.allclose(fg.omega(p, g, EPS), fg.omega(1 - p, g, EPS), rtol=1e-12, atol=0)
        assert np.all(fg.omega(p, g, EPS) < dyn.omega(p, EPS))
        assert np.all(fg.omega(p, g, EPS) <= fg.omega_max(g, EPS))


@pytest.mark.parametrize("g", [2, 5, 16])
def test_derivative_matches_central_differences(g):
    x = np.linspace(-6, 6, 49)
    h = 1e-5
    fd = (fg.omega_logit(x + h, g, EPS) - fg.omega_logit(x - h, g, EPS)) / (2 * h)
    assert np.max(np.abs(fg.domega_dlogit(x, g, EPS) - fd)) < 1e-7
    assert np.max(np.abs(fg.domega_dlogit(x, g, EPS, DR))) < 1e-12  # constant


def test_h_g_fixed_points_and_dr_step():
    """beta 2, p_ref 0.7: p* = 1.000 but p*_8 = 0.879; every p*_G solves h_G(p) = p
    and lies above p_ref (Omega_G > 0); the Dr. step is logit p_ref + (1 - 1/G)/beta."""
    (pop,) = [f for f in fxp.fixed_points(2.0, 0.7, EPS) if f.stable]
    assert pop.p_star > 0.9999
    fps = fxp.fixed_points(2.0, 0.7, EPS, group_size=8)
    assert len(fps) == 1 and fps[0].stable and abs(fps[0].p_star - 0.8792) < 1e-4
    x = fps[0].logit_p_star
    assert abs(dyn.h_logit(x, 0.7, 2.0, EPS, group_size=8) - x) < 1e-9
    l_ref = math.log(0.7 / 0.3)
    step = dyn.step_logit("dr_grpo", 0.3, 0.7, 2.0, EPS, group_size=8)
    assert abs(step - (l_ref + (1 - 1 / 8) / 2.0)) < 1e-12
    # G -> infinity: p*_G approaches p*, the smallest (stable) fixed point at beta 3, p_ref 0.5
    p3 = fxp.fixed_points(3.0, 0.5, EPS)[0]
    assert p3.stable and abs(p3.p_star - 0.6702) < 1e-4
    gaps = [
        p3.p_star - fxp.fixed_points(3.0, 0.5, EPS, group_size=g)[0].p_star for g in (4, 16, 256)
    ]
    assert gaps[0] > gaps[1] > gaps[2] > 0 and gaps[2] < 1e-3
    assert expit(l_ref) == pytest.approx(0.7)


def test_bad_group_size_and_eps_are_refused():
    with pytest.raises(ValueError, match="group size"):
        fg.omega(0.5, 1, EPS)
    with pytest.raises(ValueError, match="group size"):
        fg.omega(0.5, 2.5, EPS)
    with pytest.raises(ValueError, match="eps"):
        fg.omega(0.5, 4, -1.0)
