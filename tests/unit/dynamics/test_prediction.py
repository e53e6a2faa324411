"""grpo_repro.dynamics.prediction against closed forms: orbit classification (Thm 2, 6; the stable
2-cycle of the paper's example), the Bernoulli KL of Gibbs policies (Thm 1), beta_eff (Thm 2-3) and
the monotone propagation of a p_ref interval to p* (implicit function theorem)."""

import numpy as np
import pytest
from scipy.special import expit, logit

from grpo_repro import variants as reg
from grpo_repro.dynamics import fixed_points as fxp
from grpo_repro.dynamics import maps as dyn
from grpo_repro.dynamics import oracle as orc
from grpo_repro.dynamics import prediction as prd

EPS = 1e-5


def test_limit_from_fixed_point_two_cycle_and_chaos():
    kind, p = prd.limit_from(0.2, 1.0, EPS)
    assert kind == "fixed_point" and p == pytest.approx(0.6812834, abs=1e-7)
    assert abs(dyn.h(p, 0.2, 1.0, EPS) - p) < 1e-12
    (stable,) = [f for f in fxp.fixed_points(1.0, 0.2, EPS) if f.stable and f.p_star < 0.9]
    assert p == pytest.approx(stable.p_star, abs=1e-12)
    kind, (a, b) = prd.limit_from(0.001, 5.0, EPS)  # the paper's "divergent" example
    assert kind == "two_cycle"
    assert a == pytest.approx(0.0023380, rel=1e-4) and b == pytest.approx(0.0587158, rel=1e-4)
    kind, _ = prd.limit_from(1e-4, 5.0, EPS, p0=0.1)  # Fig 5's chaotic panel
    assert kind == "not_converged"


def test_limit_from_is_vectorised():
    p_ref = np.array([0.2, 0.001, 0.5])
    beta = np.array([[1.0], [5.0]])
    out = prd.orbit_limits(p_ref, beta, EPS)
    assert out["kind"].shape == (2, 3)
    res = prd.limit_from(p_ref, beta, EPS)
    assert res.shape == (2, 3) and res[1, 1][0] == "two_cycle"
    for idx in np.ndindex(res.shape):
        kind, val = prd.limit_from(float(p_ref[idx[1]]), float(beta[idx[0], 0]), EPS)
        assert res[idx][0] == kind and res[idx][1] == pytest.approx(val)


def test_gibbs_kl_is_the_kl_of_the_gibbs_policy():
    prob = orc.make_problem(20, 7, seed=1, controls=False)
    rng = np.random.default_rng(0)
    for beta in (0.3, 1.0, 4.0):
        p_prev = rng.uniform(0.05, 0.95, 20)
        lp = orc.gibbs_step(prob.log_pi_ref, prob.reward, p_prev, beta, EPS, reg.get("grpo"))
        kl = np.sum(np.exp(lp) * (lp - prob.log_pi_ref), axis=1)
        np.testing.assert_allclose(
            prd.gibbs_kl(orc.pos(lp, prob.reward), prob.p_ref), kl, rtol=1e-10
        )
    assert prd.gibbs_kl(0.3, 0.3) == 0.0 and prd.gibbs_kl(1.0, 0.5) == pytest.approx(np.log(2))


def test_beta_eff_makes_p_a_fixed_point():
    p = np.array([0.3, 0.6, 0.9, 0.999])
    p_ref = 0.2
    b = prd.beta_eff(p, p_ref, EPS)
    np.testing.assert_allclose(dyn.h(p, p_ref, b, EPS), p, rtol=1e-12)
    np.testing.assert_allclose(b, dyn.omega(p, EPS) / (logit(p) - logit(p_ref)), rtol=1e-14)
    assert np.isnan(prd.beta_eff(0.1, 0.2, EPS)) and np.isnan(prd.beta_eff(0.2, 0.2, EPS))


def test_p_star_interval_is_monotone_on_a_stable_branch():
    iv = prd.p_star_interval(0.05, 0.3, 2.0, 1e-3)
    assert iv["monotone"] and iv["kinds"] == ["fixed_point"]
    lo = prd.limit_from(0.05, 2.0, 1e-3)[1]
    hi = prd.limit_from(0.3, 2.0, 1e-3)[1]
    assert iv["lo"] == pytest.approx(lo) and iv["hi"] == pytest.approx(hi) and lo < hi
    # implicit-function slope d logit p* / d logit p_ref = 1/(1 - H'(x*)) against finite differences
    d = 1e-6
    x0 = logit(prd.limit_from(0.1, 2.0, 1e-3)[1])
    x1 = logit(prd.limit_from(float(expit(logit(0.1) + d)), 2.0, 1e-3)[1])
    slope = 1 / (1 - dyn.h_prime_logit(x0, 2.0, 1e-3))
    assert (x1 - x0) / d == pytest.approx(slope, rel=1e-4)


def test_p_star_interval_flags_a_branch_change():
    iv = prd.p_star_interval(1e-4, 0.01, 5.0, EPS)  # crosses the 2-cycle region
    assert not iv["monotone"] and "two_cycle" in iv["kinds"]
    with pytest.raises(ValueError):
        prd.p_star_interval(0.3, 0.2, 1.0, EPS)
