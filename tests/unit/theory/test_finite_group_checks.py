"""The finite-group checks of stage 1 (theory/finite_group.py, docs/theory.md Sec. 8) pass
unmutated and each fails for a slip in the product (the trainer's advantage, dynamics.finite_group,
dynamics.maps, the KL gradient) or in the theory's own derivation: no check that cannot fail."""

import numpy as np
import pytest
from scipy.special import expit

from grpo_repro.dynamics import finite_group as fg
from grpo_repro.dynamics import kl_estimators as kle
from grpo_repro.dynamics import maps as dyn
from grpo_repro.theory import finite_group as tfg
from grpo_repro.theory.core import Context
from grpo_repro.train import trl_variant
from tests.unit.theory.mutants import _replace, _source

EPS = 1e-5
CHECKS = {
    "fg.omega_limit": tfg.omega_limit,
    "fg.dr_weights": tfg.dr_weights,
    "fg.dr_law": tfg.dr_law,
    "fg.brute_force_weights": tfg.brute_force,
    "fg.oracle_stationary": tfg.oracle_stationary,
}


def ctx(n=100, seed=0):
    return Context(n_random=n, tol=1e-9, rng=np.random.default_rng(seed), smoothing_eps=EPS)


def failing() -> set:
    """Ids of the finite-group checks that fail (a raising check fails, as in core.run_check)."""
    out = set()
    for cid, check in CHECKS.items():
        try:
            ok = check(ctx()).passed
        except Exception:
            ok = False
        if not ok:
            out.add(cid)
    return out


def _population_weights(x, group_size, eps, v=None):
    """Mutant: the population weights (eq. 4 / Sec. 5) in place of w+_G, w-_G."""
    p = expit(np.asarray(x, float))
    if v is not None and v.mean_only:
        return 1 - p, p
    return dyn.w_plus(p, eps), dyn.w_minus(p, eps)


# (name, patches, the checks that must fail)
MUTANTS = [
    (
        "trainer advantage with the unbiased spread (G - 1)",
        _source(
            trl_variant,
            (
                "var = (groups**2).mean(dim=1, keepdim=True)",
                "var = (groups**2).sum(dim=1, keepdim=True) / (group_size - 1)",
            ),
        ),
        {"fg.brute_force_weights", "fg.oracle_stationary"},
    ),
    (
        "population weights instead of w+_G, w-_G",
        [(fg, "weights_logit", _population_weights)],
        {"fg.omega_limit", "fg.brute_force_weights", "fg.oracle_stationary", "fg.dr_law"},
    ),
    (
        "failure weight conditioned on J + 1 successes",
        _source(
            fg,
            (
                "_, a_minus = group_advantages(j, group_size, eps, v)",
                "_, a_minus = group_advantages(j + 1, group_size, eps, v)",
            ),
        ),
        {"fg.brute_force_weights", "fg.oracle_stationary"},
    ),
    (
        "group spread with 2 eps",
        _source(
            fg,
            (
                "np.sqrt(q * (1 - q) + np.asarray(eps, float))",
                "np.sqrt(q * (1 - q) + 2 * np.asarray(eps, float))",
            ),
        ),
        {"fg.brute_force_weights"},
    ),
    (
        "Dr. GRPO at finite G with 1/beta (no (G-1)/G)",
        _source(dyn, ("om = np.full_like(x, 1.0 - 1.0 / group_size)", "om = np.ones_like(x)")),
        {"fg.dr_law"},
    ),
    (
        "theory: Dr. advantage centred on the population p",
        [(tfg, "mean_only_advantage", lambda reward, p_hat: reward - tfg.p)],
        {"fg.dr_weights"},
    ),
    (
        "reverse KL(pi_ref || pi) in the oracle's update",
        [(kle, "grad_kl_forward", kle.grad_kl_reverse)],
        {"fg.oracle_stationary"},
    ),
]


def test_unmutated_checks_pass():
    assert failing() == set()


@pytest.mark.parametrize("name,patches,killers", MUTANTS, ids=[m[0] for m in MUTANTS])
def test_mutant_is_killed(monkeypatch, name, patches, killers):
    for module, attr, new in patches:
        _replace(monkeypatch, module, attr, new)
    failed = failing()
    assert killers <= failed, f"{name}: only {sorted(failed)} failed, expected {sorted(killers)}"


def test_omega_limit_needs_the_stated_tolerance():
    """At the largest G the error is ~3e-3 (eps = 1e-5): a tolerance below it fails the check."""
    assert tfg.omega_limit(ctx()).passed
    assert not tfg.omega_limit(ctx(), limit_tol=1e-3).passed
    assert not tfg.omega_limit(ctx(), sizes=(4, 8, 16)).passed  # small G: far from Omega
