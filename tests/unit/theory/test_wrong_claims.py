"""Stage 1's checks can fail: a wrong formula (Omega, h', the stability bound, the clipped
objective) is caught, the symbolic helpers refuse non-identities, a numeric outcome respects its
tolerance, and a crashing check is a failed record, never a pass."""

import numpy as np
import sympy as sp

from grpo_repro import theory
from grpo_repro.dynamics import maps as dyn
from grpo_repro.theory import clipping, core, numerics_maps, recurrence
from grpo_repro.theory import weights as advantage
from grpo_repro.theory.core import Check
from tests.unit.theory.test_theory import ctx

p, beta, r = recurrence.p, recurrence.beta, recurrence.r


def test_wrong_omega_is_caught():
    assert advantage.omega_identity(ctx()).passed
    assert not advantage.omega_identity(
        ctx(), claimed=1 / sp.sqrt(advantage.p * (1 - advantage.p))
    ).passed


def test_wrong_h_prime_is_caught():
    def missing_two(h):  # the paper's h' without the factor 2 in the denominator
        return -h * (1 - h) * (1 - 2 * p) / (beta * r**3)

    assert not recurrence.h_prime(ctx(), formula=missing_two).passed


def test_wrong_stability_bound_is_caught():
    def b_sq(pp, e):  # exponent 1 instead of 3/2
        return pp * (1 - pp) * sp.Abs(2 * pp - 1) / (2 * (pp * (1 - pp) + e))

    assert not recurrence.stability(ctx(), B=b_sq).passed
    assert not numerics_maps.stability_numeric(ctx(), B=lambda pp, e: 2 * dyn.B(pp, e)).passed


def test_unclipped_claim_for_clipped_objective_is_caught():
    assert not clipping.clip_identity(ctx(), claimed=lambda x, adv, sign: adv * x).passed


def test_is_zero_does_not_accept_non_identities():
    x = sp.Symbol("x", positive=True)
    assert core.is_zero(sp.log(2 * x) - sp.log(2) - sp.log(x))
    assert not core.is_zero(sp.log(x + 1) - sp.log(x))
    assert not core.equal(
        advantage.w_plus(advantage.p, advantage.eps), advantage.w_minus(advantage.p, advantage.eps)
    )
    assert core.positive_on_unit_interval(x * (1 - x), x) and not core.positive_on_unit_interval(
        x - sp.Rational(1, 2), x
    )


def test_the_probe_calls_no_identity_nonzero_and_fails_a_wrong_claim_fast():
    """core.nonzero_somewhere: False on identities (also ones that hold only for positive, or for
    integer, values of their symbols) and where it cannot decide; True on a non-identity, which
    is_zero then refuses without its rewrites."""
    x, y = sp.symbols("x y", positive=True)
    n = sp.Symbol("n", integer=True)
    t = sp.Symbol("t", real=True)
    f = sp.Function("f")
    for identity in (
        sp.log(2 * x) - sp.log(2) - sp.log(x),
        sp.sqrt(x**2) - x,
        sp.exp(t) / (sp.exp(t) + 1) - 1 / (1 + sp.exp(-t)),
        (-1) ** (2 * n) - 1,
        (x + y) ** 2 - x**2 - 2 * x * y - y**2,
    ):
        assert not core.nonzero_somewhere(identity), identity
        assert core.is_zero(identity), identity
    assert not core.nonzero_somewhere(f(x) - x)  # undecidable at a point: left to the rewrites
    assert not core.nonzero_somewhere(sp.sqrt(t - 1))  # complex at the probe points: unsure
    wrong = sp.log(x + 1) - sp.log(x) + (x + y) ** 12 - (x + y) ** 11
    assert core.nonzero_somewhere(wrong)
    assert not core.is_zero(wrong)


def test_numeric_outcome_respects_tolerance():
    assert core.numeric_outcome(np.array([1e-12, 5e-10]), 1e-9, "e", 2).passed
    assert not core.numeric_outcome(np.array([1e-12, 2e-9]), 1e-9, "e", 2).passed
    assert not core.numeric_outcome(np.array([np.nan]), 1e-9, "e", 1).passed


def test_crashing_check_is_a_failed_record():
    def boom(c):
        raise RuntimeError("boom")

    rec = core.run_check(Check("t.boom", "c", "ref", "sec", "claim", boom))
    assert rec["passed"] is False and "RuntimeError" in rec["detail"]
    assert rec["method"] == core.CRASHED  # not counted as a proof method
    assert theory.summarize([rec])["crashed"] == 1 and theory.summarize([rec])["symbolic"] == 0
