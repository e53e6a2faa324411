"""grpo_repro.dynamics.oracle (App. F, Thm 10): delta_n are one-step errors, not TV increases, so the
assumption and the conclusion can fail; the check fails on a case that violates the assumption."""

import numpy as np

from grpo_repro.dynamics import oracle as orc
from grpo_repro.dynamics import oracle_sgd as osg


def _two_outcome(ps):
    """log policies on (success, failure) with PoS ps, shape (n, 1, 2)."""
    ps = np.asarray(ps, float)
    return np.log(np.stack([ps, 1 - ps], axis=-1))[:, None, :]


REWARD = np.array([[1.0, 0.0]])


def test_exact_tracking_has_zero_errors_and_holds():
    ex = _two_outcome([0.2, 0.5, 0.6, 0.6, 0.6, 0.6, 0.6])
    c = orc.compare(ex, ex, REWARD, one_step=ex[1:])
    assert np.all(c["delta"] == 0) and c["assumption_holds"].all() and c["conclusion_holds"].all()


def test_expansive_update_violates_the_step_condition_and_the_conclusion():
    # T expands TV while the one-step errors are 0: TV_n = 0.01 * 2^n but delta_n = 0
    exact = _two_outcome([0.5] * 8)
    sgd = _two_outcome(0.5 + 0.01 * 2.0 ** np.arange(-10, -2))
    c = orc.compare(sgd, exact, REWARD, one_step=sgd[1:], tail=3)
    assert not c["step_ok"].all() and not c["assumption_holds"].any()
    assert not c["conclusion_holds"].any()  # |p~_n - p*| > 2 delta* = 0: the bound does not apply
    assert not c["bound_applies"].any()


def test_large_one_step_errors_give_delta_star_above_one():
    exact = _two_outcome([0.5] * 6)
    sgd = _two_outcome([0.5, 0.9, 0.1, 0.9, 0.1, 0.9])  # jumps of 0.8 per step
    c = orc.compare(sgd, exact, REWARD, one_step=exact[1:])
    assert c["delta_star"][-1, 0] >= 1 and not c["assumption_holds"][0]


def test_sample_based_grpo_is_measured_with_one_step_errors():
    problem = orc.make_problem(8, 6, seed=3, logit_scale=1.0)
    ex = orc.exact_iterations(problem, "grpo", 1.0, 1e-5, 6)
    out = osg.run(problem, osg.SGDSettings(G=64, mu=20, lr=1.0, n_iter=6, seed=0))
    one = orc.one_step_targets(problem, out["log_pi"], "grpo", 1.0, 1e-5)
    c = orc.compare(out["log_pi"], ex["log_pi"], problem.reward, one)
    assert c["event_ok"].all()  # |p~_n - p_n| <= TV_n always
    assert np.all(c["delta"] >= 0) and np.all(np.diff(c["delta_star"], axis=0) >= 0)
    # where the assumption holds and p_n converged the conclusion holds (the theorem)
    app = c["bound_applies"]
    assert np.all(c["conclusion_holds"][app])
    assert np.all(c["tv"][0] < 1e-15) and np.all(c["delta_star"][0] == 0)  # pi~_0 = pi_0 = pi_ref
