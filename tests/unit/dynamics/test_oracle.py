"""Finite-policy oracle (grpo_repro.dynamics.oracle, grpo_repro.dynamics.oracle_sgd): exact Gibbs iterates (Thm 8)
against the scalar PoS recurrences (Thm 2, 5, 9, Sec. 5), Lemma 2-3 (geometric anchor, Renyi term),
an independent optimiser, and sample-based GRPO against the exact iterates (App. F, Thm 10)."""

import numpy as np
import pytest
from scipy.special import logsumexp

from grpo_repro import variants as reg
from grpo_repro.dynamics import oracle as orc
from grpo_repro.dynamics import oracle_sgd as osg

BETA, EPS = 1.0, 1e-5


@pytest.fixture(scope="module")
def problem():
    return orc.make_problem(10, 6, seed=3)


def test_problem_has_successes_failures_and_controls(problem):
    rnd = problem.kind == "random"
    assert np.all(problem.reward[rnd].sum(1) >= 1) and np.all((1 - problem.reward[rnd]).sum(1) >= 1)
    assert problem.p_ref[problem.kind == "zero"] == pytest.approx(0.0)
    assert problem.p_ref[problem.kind == "one"] == pytest.approx(1.0)
    np.testing.assert_allclose(logsumexp(problem.log_pi_ref, axis=1), 0.0, atol=1e-14)


@pytest.mark.parametrize("variant", orc.VARIANTS)
@pytest.mark.parametrize("init", ["ref", "perturbed"])
def test_exact_pos_equals_scalar_recurrence(problem, variant, init):
    alpha = 0.3 if variant.startswith("two_kl") else None
    lp0 = None if init == "ref" else orc.perturbed_policy(problem, seed=7)
    ex = orc.exact_iterations(problem, variant, BETA, EPS, 25, alpha=alpha, log_pi0=lp0)
    p0 = None if lp0 is None else orc.pos(lp0, problem.reward)
    sc = orc.scalar_pos(
        problem, variant, BETA, EPS, 25, alpha=alpha, p0=p0, delta_r_seq=ex["delta_r"]
    )
    assert np.max(np.abs(ex["p"] - sc)) <= 1e-12
    # controls: p_ref = 0 absorbing, p_ref = 1 stays
    assert np.all(ex["p"][:, problem.kind == "zero"] == 0.0)
    assert np.all(ex["p"][:, problem.kind == "one"] >= 1 - 1e-12)
    if variant.startswith("two_kl") and init == "perturbed":
        # without Delta_R the scalar recurrence would be wrong: the Renyi term matters
        wrong = orc.scalar_pos(problem, variant, BETA, EPS, 25, alpha=alpha, p0=p0)
        assert np.max(np.abs(ex["p"] - wrong)) > 1e-4


def test_delta_r_vanishes_from_pi_ref_and_decays_from_a_perturbed_start(problem):
    ex = orc.exact_iterations(problem, "two_kl", BETA, EPS, 15, alpha=0.3)
    assert np.max(np.abs(ex["delta_r"])) < 1e-12  # conditionals on S and F stay those of pi_ref
    ex = orc.exact_iterations(
        problem, "two_kl", BETA, EPS, 15, alpha=0.3, log_pi0=orc.perturbed_policy(problem, seed=7)
    )
    d = np.abs(ex["delta_r"][:, problem.kind == "random"]).max(axis=1)
    assert d[0] > 1e-2 and d[-1] < d[0] * 0.7**12  # geometric decay, rate (1-alpha)


def test_geometric_anchor_lemma_2(problem):
    """alpha KL(pi||pi_ref) + (1-alpha) KL(pi||pi_o) - KL(pi||pibar) is the same for every pi."""
    rng = np.random.default_rng(0)
    lo = orc.perturbed_policy(problem, seed=1)
    bar = orc.two_kl_anchor(problem.log_pi_ref, lo, 0.4)

    def kl(lp, lq):
        return np.sum(np.exp(lp) * (lp - lq), axis=1)

    vals = []
    for _ in range(5):
        lp = orc.log_normalise(rng.normal(size=problem.shape))
        vals.append(0.4 * kl(lp, problem.log_pi_ref) + 0.6 * kl(lp, lo) - kl(lp, bar))
    np.testing.assert_allclose(vals, np.broadcast_to(vals[0], np.shape(vals)), atol=1e-12)


def test_renyi_divergence():
    rng = np.random.default_rng(2)
    lp = orc.log_normalise(rng.normal(size=(4, 5)))
    lq = orc.log_normalise(rng.normal(size=(4, 5)))
    mask = np.ones((4, 5), dtype=bool)
    np.testing.assert_allclose(orc.renyi_conditional(lp, lp, mask, 0.3), 0.0, atol=1e-14)
    d = orc.renyi_conditional(lp, lq, mask, 0.3)
    direct = np.log(np.sum(np.exp(0.3 * lp + 0.7 * lq), axis=1)) / (0.3 - 1)
    np.testing.assert_allclose(d, direct, rtol=1e-12)
    assert np.all(d > 0)
    kl = np.sum(np.exp(lp) * (lp - lq), axis=1)  # alpha -> 1: KL
    np.testing.assert_allclose(orc.renyi_conditional(lp, lq, mask, 1 - 1e-6), kl, rtol=1e-4)
    assert np.isnan(orc.renyi_conditional(lp, lq, np.zeros_like(mask), 0.3)).all()


@pytest.mark.parametrize("variant", ["grpo", "mirror", "dr_grpo", "two_kl"])
def test_independent_optimiser_lands_on_the_closed_form(problem, variant):
    alpha = 0.3 if variant == "two_kl" else None
    lp0 = orc.perturbed_policy(problem, seed=7)
    ex = orc.exact_iterations(problem, variant, BETA, EPS, 4, alpha=alpha, log_pi0=lp0)
    opt = orc.optimiser_iterations(problem, variant, BETA, EPS, 4, alpha=alpha, log_pi0=lp0)
    assert np.max(orc.l1_distance(opt, ex["log_pi"])) <= 1e-5


def test_optimiser_is_not_the_closed_form_when_the_objective_differs(problem):
    """The optimiser solves the objective it is given: a different beta lands elsewhere."""
    ex = orc.exact_iterations(problem, "grpo", BETA, EPS, 1)
    opt = orc.optimiser_iterations(problem, "grpo", 2 * BETA, EPS, 1)
    assert np.max(orc.l1_distance(opt[1:], ex["log_pi"][1:])) > 1e-2


def test_surrogate_gradient_matches_finite_differences(problem):
    rng = np.random.default_rng(4)
    log_old = orc.log_normalise(problem.log_pi_ref + 0.3 * rng.normal(size=problem.shape))
    idx = osg.sample_outcomes(rng, log_old, 8)
    r = problem.reward[np.arange(problem.shape[0])[:, None], idx]
    adv, _ = osg.group_advantage(r, EPS, reg.get("grpo"))
    theta = log_old + 0.05 * rng.normal(size=problem.shape)
    for clip in (None, 0.2):
        for kl in ("exact", "k3"):
            anchors = [(0.4, problem.log_pi_ref), (0.6, log_old)]
            _, grad, _ = osg.surrogate(theta, idx, adv, log_old, anchors, BETA, clip, kl)
            h = 1e-6
            for qq, kk in [(0, 0), (1, 2), (3, 5), (5, 1)]:
                e = np.zeros_like(theta)
                e[qq, kk] = h
                fp = osg.surrogate(theta + e, idx, adv, log_old, anchors, BETA, clip, kl)[0][qq]
                fm = osg.surrogate(theta - e, idx, adv, log_old, anchors, BETA, clip, kl)[0][qq]
                assert grad[qq, kk] == pytest.approx((fp - fm) / (2 * h), rel=1e-5, abs=1e-8)


def test_degenerate_groups_carry_no_signal():
    r = np.array([[0, 0, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]], float)
    adv, p_hat = osg.group_advantage(r, EPS, reg.get("grpo"))
    assert np.all(adv[:2] == 0) and np.all(adv[2] != 0)
    assert adv[2, 0] == pytest.approx(0.75 / np.sqrt(0.25 * 0.75 + EPS))
    adv_dr, _ = osg.group_advantage(r, EPS, reg.get("dr_grpo"))
    np.testing.assert_allclose(adv_dr[2], [0.75, -0.25, -0.25, -0.25])


def test_sample_based_grpo_tracks_the_exact_iterates_with_many_samples():
    # moderate pi_ref (logit std 1): no outcome so rare that mu steps of softmax gradient ascent
    # cannot reach its exact probability (with std 2 a success of pi_ref 3e-4 stays unreached)
    problem = orc.make_problem(10, 6, seed=3, logit_scale=1.0)
    ex = orc.exact_iterations(problem, "grpo", BETA, EPS, 3)
    big = osg.run(problem, osg.SGDSettings(G=4096, mu=100, lr=2.0, n_iter=3, seed=0))
    small = osg.run(problem, osg.SGDSettings(G=4, mu=100, lr=2.0, n_iter=3, seed=0))
    c_big, c_small = (
        orc.compare(
            out["log_pi"],
            ex["log_pi"],
            problem.reward,
            orc.one_step_targets(problem, out["log_pi"], "grpo", BETA, EPS),
        )
        for out in (big, small)
    )
    assert c_big["tv"].max() < 0.06
    assert c_small["tv"][1:].mean() > 2 * c_big["tv"][1:].mean()  # G matters
    assert small["frac_degenerate"].mean() > big["frac_degenerate"].mean()
    for c in (c_big, c_small):  # event lemma |p~ - p| <= TV; Thm 10 where its assumption holds
        assert np.all(c["gap"] <= c["tv"] + 1e-12)
        assert np.all(c["conclusion_holds"][c["bound_applies"]])
    assert c_small["delta_star"][-1].mean() > c_big["delta_star"][-1].mean()  # G matters
    assert np.all(big["p"][:, problem.kind == "zero"] == 0.0)  # GRPO cannot create successes


def test_clipping_limits_the_step_and_is_counted(problem):
    kw = dict(G=64, mu=20, lr=2.0, n_iter=1, seed=1)
    free = osg.run(problem, osg.SGDSettings(**kw))
    clip = osg.run(problem, osg.SGDSettings(clip_eps=0.2, **kw))
    assert free["clip_frac"][0] == 0 and clip["clip_frac"][0] > 0
    step = lambda out: orc.l1_distance(out["log_pi"][1], out["log_pi"][0]).mean()  # noqa: E731
    assert step(clip) < step(free)
