"""Every new or rewritten stage-1 check (docs/theory.md Sec. 7) fails when it
is fed a wrong claim, a wrong witness or a mutated formula (rule: no check that cannot fail)."""

import numpy as np
import sympy as sp

from grpo_repro.dynamics import kl_estimators as kle
from grpo_repro.dynamics import maps as dyn
from grpo_repro.dynamics import prediction as prd
from grpo_repro.theory import (
    kl_estimator,
    mirror_dr,
    numerics_maps,
    orbits,
    parametric,
    prediction,
    recurrence,
    two_kl,
    weights,
)
from grpo_repro.theory.core import Context

R = sp.Rational


def ctx(n=100, tol=1e-9, seed=0):
    return Context(n_random=n, tol=tol, rng=np.random.default_rng(seed))


def fails(check, **kw) -> bool:
    """As the stage runs it (core.run_check): a check that raises is a failed check."""
    try:
        return not check(ctx(), **kw).passed
    except Exception:
        return True


def test_w_minus_exceeds_w_plus_fails_for_swapped_weights(monkeypatch):
    assert weights.w_minus_exceeds_w_plus(ctx()).passed
    wp, wm = weights.w_plus, weights.w_minus
    monkeypatch.setattr(weights, "w_plus", wm)
    monkeypatch.setattr(weights, "w_minus", wp)
    assert not weights.w_minus_exceeds_w_plus(ctx()).passed


def test_dr_weights_are_derived_not_defined(monkeypatch):
    assert weights.dr_weights_derived(ctx()).passed
    monkeypatch.setattr(weights, "dr_weights", lambda p: (1 - p, 1 - p))
    assert not weights.dr_weights_derived(ctx()).passed
    monkeypatch.setattr(weights, "dr_weights", lambda p: (p, 1 - p))
    assert not weights.dr_weights_derived(ctx()).passed


def test_mirror_dr_induction_rejects_wrong_progressions():
    L, beta = mirror_dr.L, mirror_dr.beta
    assert mirror_dr.mirror_dr_arithmetic(ctx()).passed
    assert not mirror_dr.mirror_dr_arithmetic(ctx(), claimed=lambda n: L + 2 * n / beta).passed
    assert not mirror_dr.mirror_dr_arithmetic(ctx(), claimed=lambda n: L + (n + 1) / beta).passed


def test_mirror_checks_fail_when_anchored_on_pi_ref(monkeypatch):
    orig = mirror_dr.anchor_pos
    monkeypatch.setattr(
        mirror_dr, "anchor_pos", lambda v, p_prev, p_ref: orig("grpo", p_prev, p_ref)
    )
    assert not mirror_dr.mirror_recurrence(ctx()).passed
    assert not mirror_dr.mirror_increasing(ctx()).passed
    assert not mirror_dr.mirror_converges(ctx()).passed
    assert not mirror_dr.mirror_dr_arithmetic(ctx()).passed


def test_h_is_tied_to_the_gibbs_derivation(monkeypatch):
    assert recurrence.h_from_gibbs(ctx()).passed
    orig = recurrence.h_of_r
    monkeypatch.setattr(
        recurrence,
        "h_of_r",
        lambda kk=recurrence.k, b=recurrence.beta, rr=recurrence.r: orig(kk, 2 * b, rr),
    )
    assert not recurrence.h_from_gibbs(ctx()).passed


def test_two_kl_non_monotonicity_needs_a_real_counterexample():
    assert two_kl.two_kl_not_monotone(ctx()).passed
    monotone = dict(two_kl.NON_MONOTONE, alpha=R(1, 100))  # Omega(p_1) > alpha Omega(p_0)
    assert not two_kl.two_kl_not_monotone(ctx(), params=monotone).passed


def test_two_kl_recurrence_numeric_fails_for_a_wrong_library(monkeypatch):
    """var.two_kl_recurrence_numeric checks the library (maps.step_logit, oracle's anchor, Gibbs
    step and Delta_R) against Thm 9's derived map: a wrong library map or oracle fails it."""
    from grpo_repro.dynamics import oracle as orc

    check = two_kl.two_kl_recurrence_numeric
    assert check(ctx()).passed
    step = dyn.step_logit
    for wrong in (
        lambda v, x, pr, b, e, alpha=None, **kw: step(v, x, pr, b, e, alpha=1 - alpha, **kw),
        lambda v, x, pr, b, e, delta_r=0.0, **kw: step(v, x, pr, b, e, delta_r=-delta_r, **kw),
        lambda v, x, pr, b, e, **kw: step(v, x, pr, 2 * b, e, **kw),
    ):
        monkeypatch.setattr(dyn, "step_logit", wrong)
        assert fails(check)
    monkeypatch.setattr(dyn, "step_logit", step)
    assert check(ctx()).passed
    anchor = orc.two_kl_anchor
    monkeypatch.setattr(orc, "two_kl_anchor", lambda r, o, a: anchor(r, o, 1 - a))
    assert fails(check)
    monkeypatch.setattr(orc, "two_kl_anchor", anchor)
    gibbs = orc.gibbs_step
    monkeypatch.setattr(orc, "gibbs_step", lambda la, r, p, b, e, v: gibbs(la, r, p, b, 2 * e, v))
    assert fails(check)


def test_amplification_numeric_fails_for_wrong_library_fixed_points(monkeypatch):
    from grpo_repro.dynamics import fixed_points as fxp

    assert recurrence.amplification_numeric(ctx()).passed
    orig = fxp.fixed_points
    monkeypatch.setattr(fxp, "fixed_points", lambda b, p_ref, e: orig(b, p_ref, e)[1:])
    assert fails(recurrence.amplification_numeric)  # a row without a fixed point
    low = fxp.FixedPoint(0.15, -1.73, 0.0, True, 0.0)  # below p_ref on about half the rows
    monkeypatch.setattr(fxp, "fixed_points", lambda b, p_ref, e: orig(b, p_ref, e) + [low])
    assert fails(recurrence.amplification_numeric)


def test_several_fixed_points_needs_sign_changes():
    assert orbits.several_fixed_points(ctx()).passed
    unique = dict(orbits.SEVERAL_FIXED_POINTS, beta=10)  # a single fixed point near p_ref
    assert not orbits.several_fixed_points(ctx(), witness=unique).passed


def test_stable_two_cycle_is_not_found_where_there_is_none():
    assert orbits.stable_two_cycle(ctx()).passed
    assert not orbits.stable_two_cycle(ctx(), case=dict(orbits.TWO_CYCLE, beta=1)).passed
    shifted = dict(orbits.TWO_CYCLE, lo=R(2340, 10**6), hi=R(2341, 10**6))  # misses the cycle
    assert not orbits.stable_two_cycle(ctx(), case=shifted).passed


def test_local_convergence_fails_around_an_unstable_fixed_point():
    assert orbits.local_convergence(ctx()).passed
    unstable = [(5, R(1, 1000), R(1, 10**5), R(8, 1000), R(95, 10000))]  # p* ~ 0.0086, h' ~ -1.06
    assert not orbits.local_convergence(ctx(), cases=unstable).passed


def test_local_convergence_numeric_fails_if_iterates_do_not_converge(monkeypatch):
    assert orbits.local_convergence_numeric(ctx()).passed
    monkeypatch.setattr(dyn, "iterate_h", lambda p0, p_ref, beta, eps, n: np.stack([p0, p0]))
    assert not orbits.local_convergence_numeric(ctx()).passed


def test_tv_accumulation_needs_a_non_expansive_update():
    assert parametric.tv_accumulation(ctx()).passed
    assert not parametric.tv_accumulation(ctx(), lam_max=2).passed


def test_tv_can_expand_fails_where_h_contracts():
    assert parametric.tv_can_expand(ctx()).passed
    flat = dict(parametric.EXPANSION, p_ref=R(3, 10), a=R(3, 10), b=R(31, 100))
    assert not parametric.tv_can_expand(ctx(), case=flat).passed


def test_limsup_constant_below_one_is_refuted_by_the_witness():
    assert parametric.limsup_conclusion(ctx()).passed
    assert parametric.limsup_conclusion(ctx(), factor=1).passed
    assert not parametric.limsup_conclusion(ctx(), factor=R(1, 2)).passed


def test_kl_identities_fail_for_a_wrong_estimator(monkeypatch):
    assert kl_estimator.k3_plain_is_reverse(ctx()).passed
    assert kl_estimator.k3_ratio_is_forward(ctx()).passed
    # k3 with r inverted (pi/pi_ref): neither identity holds any more
    monkeypatch.setattr(
        kl_estimator, "k3_expr", lambda pi_o, ref_o: pi_o / ref_o - 1 - sp.log(pi_o / ref_o)
    )
    assert not kl_estimator.k3_plain_is_reverse(ctx()).passed
    assert not kl_estimator.k3_ratio_is_forward(ctx()).passed


def test_plain_vs_forward_counterexample_needs_pi_ne_ref(monkeypatch):
    assert kl_estimator.k3_plain_not_forward(ctx()).passed
    third = (R(1, 3),) * 3
    monkeypatch.setattr(kl_estimator, "COUNTER", (third, third))  # pi = pi_ref: both gradients 0
    assert not kl_estimator.k3_plain_not_forward(ctx()).passed


def test_kl_numeric_fails_if_the_ratio_is_dropped(monkeypatch):
    assert kl_estimator.k3_identities_numeric(ctx()).passed
    orig = kle.estimator_grad
    monkeypatch.setattr(kle, "estimator_grad", lambda th, lr, ratio=False: orig(th, lr, False))
    assert not kl_estimator.k3_identities_numeric(ctx()).passed


def test_prediction_checks_fail_for_wrong_formulas(monkeypatch):
    assert prediction.gibbs_kl_bernoulli(ctx()).passed
    rev = lambda p, q: prediction.bernoulli_kl(q, p)  # noqa: E731
    assert not prediction.gibbs_kl_bernoulli(ctx(), kl_formula=rev).passed
    assert prediction.p_star_monotone(ctx()).passed
    assert not prediction.p_star_monotone(ctx(), claimed=lambda hp: 1 / (1 + hp)).passed
    assert prediction.beta_eff_closed_form(ctx()).passed
    om = weights.omega
    monkeypatch.setattr(weights, "omega", lambda p, e: 2 * om(p, e))
    assert not prediction.beta_eff_closed_form(ctx()).passed


def test_prediction_numeric_fails_for_the_reverse_kl(monkeypatch):
    assert prediction.library_numeric(ctx()).passed
    orig = prd.gibbs_kl
    monkeypatch.setattr(prd, "gibbs_kl", lambda p, q: orig(q, p))
    assert not prediction.library_numeric(ctx()).passed


def test_numerics_fail_for_a_wrong_library(monkeypatch):
    for check in (
        numerics_maps.maps_vs_symbolic,
        numerics_maps.recurrences_vs_symbolic,
        numerics_maps.fixed_points_vs_symbolic,
    ):
        assert check(ctx()).passed
    orig = dyn.omega_logit
    monkeypatch.setattr(dyn, "omega_logit", lambda x, eps: orig(x, eps) ** 2)  # no square root
    assert fails(numerics_maps.recurrences_vs_symbolic)
    assert fails(numerics_maps.fixed_points_vs_symbolic)
    h = dyn.h
    monkeypatch.setattr(dyn, "h", lambda p, p_ref, beta, eps: h(p, p_ref, 2 * beta, eps))
    assert fails(numerics_maps.maps_vs_symbolic)


def test_scalar_map_fails_for_a_wrong_scalar_copy(monkeypatch):
    from grpo_repro.dynamics import fixed_points as fxp
    from grpo_repro.theory import numerics_edges

    assert numerics_edges.scalar_map(ctx()).passed
    orig = fxp._H_scalar
    monkeypatch.setattr(fxp, "_H_scalar", lambda x, lr, b, e: orig(x, lr, b, 2 * e))
    assert fails(numerics_edges.scalar_map)


def test_prop1_erratum_fails_if_h_jumps_to_p_ref_at_the_ends(monkeypatch):
    """The erratum records the product's h(0), h(1) at eps = 0: a product that returns p_ref there
    (zero-advantage convention) makes it fail, as does a wrong limit."""
    from grpo_repro.theory import numerics_edges

    assert numerics_edges.prop1_eps_zero(ctx()).passed
    orig = dyn.h

    def conv(p, p_ref, beta, eps):
        out = orig(p, p_ref, beta, eps)
        return np.where((np.asarray(p) % 1 == 0) & (np.asarray(eps) == 0), p_ref, out)

    monkeypatch.setattr(dyn, "h", conv)
    assert fails(numerics_edges.prop1_eps_zero)
