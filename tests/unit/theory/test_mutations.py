"""Mutation test of stage 1: small mutations of the product's
code (grpo_repro.dynamics: the maps, fixed points and 2-cycles, the oracle, the clipped surrogate,
Thm 10's measurement) and of the theory's own formulas must each be rejected by the THEORY STAGE
(some claim fails, or an erratum is no longer demonstrated: the stage exits 1) and, for the older
mutations of grpo_repro.dynamics, by its numeric unit tests too. A future edit that makes a check
vacuous lowers the kill rate and fails this test.

Two kinds of mutation: a function replaced in every grpo_repro module that holds it (so
`from x import f` copies are replaced too; checks look formulas up at call time), and a SOURCE
mutation of a product module (`_source`: a line of its code edited, the module's functions
recompiled and swapped in), as a slip in the code would be. The default suite runs the eight
mutants (FAST); the whole list is marked slow (`pytest -m slow`).
"""

import pytest

from grpo_repro import theory
from tests.unit.theory.mutants import MUTATIONS, _replace
from tests.unit.theory.mutants_source import PRODUCT, SOURCE_SLIPS

ALL = SOURCE_SLIPS + PRODUCT + MUTATIONS
#: ids of the mutants run by the default suite
FAST = {m[0] for m in SOURCE_SLIPS}


def _stage_order():
    """The registry with the checks of the product's code first (only the speed of a kill
    depends on the order)."""
    checks = theory.registry()
    return sorted(checks, key=lambda c: not c.id.startswith(("num.", "kl.stationary")))


def _theory_rejects() -> str | None:
    """Id of the first check that fails the theory stage (a failed or crashed claim, or an
    erratum no longer demonstrated), None if the stage would pass; stops there."""
    for check in _stage_order():
        rec_ = theory.run_check(check, n_random=100, tol=1e-9, seed=0)
        if not rec_["passed"]:
            return rec_["id"]
    return None


def _test_rejects(test) -> bool:
    try:
        test()
    except (AssertionError, ValueError, FloatingPointError):
        return True
    return False


def test_unmutated_stage_passes():
    """Without a mutation every check passes at the mutants' settings (kills are not noise)."""
    assert _theory_rejects() is None


@pytest.fixture(scope="module")
def kills():
    return {}


def _params():
    for name, patches, tests in ALL:
        marks = () if name in FAST else (pytest.mark.slow,)
        yield pytest.param(name, patches, tests, id=name, marks=marks)


@pytest.mark.parametrize("name,patches,tests", list(_params()))
def test_mutation_is_killed(monkeypatch, kills, name, patches, tests):
    for module, attr, new in patches:
        _replace(monkeypatch, module, attr, new)
    by = _theory_rejects()
    tests_ok = all(_test_rejects(t) for t in tests)
    kills[name] = (by, tests_ok)
    assert by is not None, f"theory stage accepts the mutation {name!r}"
    assert tests_ok, f"a numeric dynamics test accepts the mutation {name!r}"


def test_kill_rate(kills, capsys):
    """Printed: the kill rate of the mutants run in this session (all of ALL under -m slow)."""
    killed = [n for n, (by, ok) in kills.items() if by and ok]
    with capsys.disabled():
        print(f"\nmutation kill rate (theory stage): {len(killed)}/{len(kills)}")
        for name, (by, ok) in kills.items():
            what = f"killed by {by}" if by else "SURVIVED"
            print(f"  {name}: {what}" + ("" if ok else " (a dynamics test survived)"))
    assert len(SOURCE_SLIPS) == 8 and len(PRODUCT) >= 10
    assert set(kills) >= FAST, "run after the mutants (same module)"
    assert all(kills[n][0] for n in FAST), "a source-slip mutant survived the theory stage"
    assert len(killed) >= 0.95 * len(kills)
