"""grpo_repro.dynamics: weights of eq. (4), the map h of Thm 2 (Prop. 1), B of Thm 6 and the PoS
recurrences of GRPO (Thm 2), Mirror GRPO (Thm 5), Dr. / Mirror Dr. GRPO (Sec. 5), two-KL (Thm 9)."""

import numpy as np
import pytest
from scipy.special import expit, logit

from grpo_repro.dynamics import maps as dyn

P = np.linspace(0.001, 0.999, 999)
EPS = 1e-5


def test_unsmoothed_weights_are_the_square_roots():
    np.testing.assert_allclose(dyn.w_plus(P, 0.0), np.sqrt((1 - P) / P), rtol=1e-14)
    np.testing.assert_allclose(dyn.w_minus(P, 0.0), np.sqrt(P / (1 - P)), rtol=1e-14)
    assert dyn.w_plus(0.0, 0.0) == np.inf and dyn.w_plus(1.0, 0.0) == 0.0
    assert dyn.w_minus(1.0, 0.0) == np.inf and dyn.w_minus(0.0, 0.0) == 0.0


@pytest.mark.parametrize("eps", [0.0, 1e-5, 1e-2, 1.0])
def test_weight_identities(eps):
    wp, wm = dyn.w_plus(P, eps), dyn.w_minus(P, eps)
    np.testing.assert_allclose(wp + wm, dyn.omega(P, eps), rtol=1e-13)
    np.testing.assert_allclose(wp, dyn.w_minus(1 - P, eps), rtol=1e-12)  # w+(p) = w-(1-p)
    assert np.all(np.diff(wp) < 0) and np.all(np.diff(wm) > 0)  # rare successes get more credit
    i = np.argmin(np.abs(P - 0.5))
    assert wp[i] == pytest.approx(wm[i])


def test_smoothed_weights_finite_at_the_ends():
    for p in (0.0, 1.0):
        assert np.isfinite(dyn.w_plus(p, EPS)) and np.isfinite(dyn.w_minus(p, EPS))
    assert dyn.omega(0.0, EPS) == pytest.approx(1 / np.sqrt(EPS))
    with pytest.raises(ValueError):
        dyn.w_plus(0.3, -1e-3)


def test_h_closed_forms_and_boundaries():
    p_ref, beta = 0.2, 0.7
    direct = 1 / (1 + (1 - p_ref) / p_ref * np.exp(-1 / (beta * np.sqrt(P * (1 - P) + EPS))))
    np.testing.assert_allclose(dyn.h(P, p_ref, beta, EPS), direct, rtol=1e-13)
    # p_ref = 0 absorbing, p_ref = 1 gives 1 (even with eps = 0 at p in {0, 1}: no nan)
    for eps in (0.0, EPS):
        assert np.all(dyn.h(np.r_[0.0, P, 1.0], 0.0, beta, eps) == 0.0)
        assert np.all(dyn.h(np.r_[0.0, P, 1.0], 1.0, beta, eps) == 1.0)
    # eps > 0: continuous on [0, 1] and p = 1 is not an exact fixed point for interior p_ref
    assert dyn.h(1.0, 0.2, 5.0, 1e-2) < 1.0
    assert dyn.h(1.0, 0.2, 5.0, 1e-2) == pytest.approx(dyn.h(1 - 1e-12, 0.2, 5.0, 1e-2), abs=1e-9)


def test_h_prime_against_finite_differences_and_monotonicity():
    rng = np.random.default_rng(0)
    for _ in range(50):
        p_ref, beta, eps = (
            rng.uniform(0.01, 0.99),
            10 ** rng.uniform(-1, 1),
            10 ** rng.uniform(-5, -1),
        )
        p = rng.uniform(0.05, 0.95)
        d = 1e-6
        fd = (dyn.h(p + d, p_ref, beta, eps) - dyn.h(p - d, p_ref, beta, eps)) / (2 * d)
        assert dyn.h_prime(p, p_ref, beta, eps) == pytest.approx(fd, rel=1e-5, abs=1e-10)
    hp = dyn.h_prime(P, 0.3, 1.0, EPS)
    assert np.all(hp[P < 0.5] < 0) and np.all(hp[P > 0.5] > 0)  # Prop. 1: V shape of h


def test_B_is_beta_times_h_prime_at_a_fixed_point():
    # pick p*, choose p_ref so that p* is a fixed point: logit p_ref = logit p* - Omega(p*)/beta
    beta = 2.0
    for p_star in (0.1, 0.3, 0.6, 0.9):
        p_ref = expit(logit(p_star) - dyn.omega(p_star, EPS) / beta)
        assert dyn.h(p_star, p_ref, beta, EPS) == pytest.approx(p_star, abs=1e-14)
        assert abs(dyn.h_prime(p_star, p_ref, beta, EPS)) == pytest.approx(
            dyn.B(p_star, EPS) / beta, rel=1e-10
        )
    assert dyn.B(0.5, EPS) == 0.0 and dyn.B(0.0, EPS) == 0.0 and dyn.B(1.0, EPS) == 0.0


def test_grpo_recurrence_iterates_h():
    p_ref, beta = 0.2, 1.0
    seq = dyn.recurrence("grpo", p_ref, beta, EPS, 30)
    assert seq[0] == pytest.approx(p_ref)
    for n in range(1, 31):
        assert seq[n] == pytest.approx(dyn.h(seq[n - 1], p_ref, beta, EPS), rel=1e-12)
    np.testing.assert_allclose(
        dyn.iterate_h(0.1, p_ref, beta, EPS, 5)[1], dyn.h(0.1, p_ref, beta, EPS)
    )


def test_dr_grpo_reaches_its_fixed_point_in_one_step():
    p_ref = np.array([1e-4, 0.2, 0.5, 0.9])
    beta = 0.3
    seq = dyn.recurrence("dr_grpo", p_ref, beta, EPS, 10)
    target = expit(logit(p_ref) + 1 / beta)
    np.testing.assert_allclose(seq[1:], np.broadcast_to(target, seq[1:].shape), rtol=1e-14)


def test_mirror_dr_is_an_arithmetic_progression_in_logits():
    x = dyn.recurrence("mirror_dr", 0.2, 0.5, EPS, 20, return_logits=True)
    np.testing.assert_allclose(np.diff(x), 2.0, rtol=1e-12)


def test_mirror_is_strictly_increasing_to_one():
    for p_ref in (1e-4, 0.2, 0.5, 0.9):
        x = dyn.recurrence("mirror", p_ref, 2.0, EPS, 200, return_logits=True)
        assert np.all(
            np.diff(x) >= 1 / (2.0 * np.sqrt(0.25 + EPS)) - 1e-12
        )  # increment >= Omega_min/beta
        assert expit(x[-1]) > 1 - 1e-12


@pytest.mark.parametrize("variant", dyn.VARIANTS)
def test_p_ref_zero_is_absorbing_and_one_stays(variant):
    alpha = 0.5 if variant.startswith("two_kl") else None
    for eps in (0.0, EPS):
        assert np.all(dyn.recurrence(variant, 0.0, 0.5, eps, 20, alpha=alpha) == 0.0)
        assert np.all(dyn.recurrence(variant, 1.0, 0.5, eps, 20, alpha=alpha) == 1.0)


def test_two_kl_mean_only_contracts_at_rate_one_minus_alpha():
    p_ref, beta, alpha, dr = 0.2, 1.5, 0.3, 0.1
    x = dyn.recurrence(
        "two_kl_dr", p_ref, beta, EPS, 40, alpha=alpha, delta_r=dr, return_logits=True
    )
    x_star = logit(p_ref) + dr / alpha + 1 / (alpha * beta)
    err = np.abs(x - x_star)
    np.testing.assert_allclose(err[1:] / err[:-1], 1 - alpha, rtol=1e-8)


def test_two_kl_limit_solves_its_fixed_point_equation():
    p_ref, beta, alpha = 0.3, 4.0, 0.5
    x = dyn.recurrence("two_kl", p_ref, beta, EPS, 400, alpha=alpha, return_logits=True)[-1]
    rhs = logit(p_ref) + dyn.omega_logit(x, EPS) / (alpha * beta)
    assert x == pytest.approx(rhs, abs=1e-10)
    assert expit(x) > p_ref


def test_two_kl_per_step_delta_r_and_errors():
    dr = np.linspace(0.5, 0.0, 5)
    a = dyn.recurrence("two_kl_dr", 0.2, 1.0, EPS, 5, alpha=0.5, delta_r=dr, return_logits=True)
    b = [logit(0.2)]
    for d in dr:
        b.append(0.5 * logit(0.2) + 0.5 * b[-1] + d + 1.0)
    np.testing.assert_allclose(a, b, rtol=1e-13)
    with pytest.raises(ValueError):
        dyn.recurrence("two_kl_dr", 0.2, 1.0, EPS, 5, alpha=0.5, delta_r=np.zeros(4))
    with pytest.raises(ValueError):
        dyn.recurrence("two_kl", 0.2, 1.0, EPS, 5)  # alpha missing
    with pytest.raises(ValueError):
        dyn.recurrence("ppo", 0.2, 1.0, EPS, 5)


def test_logit_forms_are_stable_near_one():
    x = np.array([30.0, 300.0, 700.0])
    v = dyn.var_logit(x)
    assert np.all(v > 0) and v[0] == pytest.approx(np.exp(-30.0), rel=1e-10)
    assert np.all(np.isfinite(dyn.omega_logit(x, EPS)))
