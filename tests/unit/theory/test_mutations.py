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

import inspect
import re
import sys

import numpy as np
import pytest
import sympy as sp
from scipy.special import expit

from grpo_repro import theory
from grpo_repro.dynamics import fixed_points as fxp
from grpo_repro.dynamics import kl_estimators as kle
from grpo_repro.dynamics import maps as dyn
from grpo_repro.dynamics import oracle as orc
from grpo_repro.dynamics import oracle_sgd as sgd
from grpo_repro.dynamics import prediction as prd
from grpo_repro.dynamics import thm10
from grpo_repro.theory import gibbs as gb
from grpo_repro.theory import mirror_dr as md
from grpo_repro.theory import recurrence as rec
from grpo_repro.theory import two_kl as tk
from grpo_repro.theory import weights as wts
from tests.unit.dynamics import test_fixed_points as t_fxp
from tests.unit.dynamics import test_maps as t_maps
from tests.unit.dynamics import test_oracle as t_orc


def _replace(monkeypatch, module, name, new):
    orig = getattr(module, name)
    for mod in list(sys.modules.values()):
        ours = getattr(mod, "__name__", "").startswith(("grpo_repro", "tests."))
        if ours and getattr(mod, name, None) is orig:
            monkeypatch.setattr(mod, name, new)


def _source(module, *edits):
    """Patches that swap in every function of `module` recompiled from its source with `edits`
    ((old, new) pairs, each `old` occurring exactly once in the original source)."""
    src = inspect.getsource(module)
    for old, _ in edits:
        assert src.count(old) == 1, f"{module.__name__}: {old!r} occurs {src.count(old)} times"
    table = dict(edits)
    mutated = re.sub("|".join(re.escape(o) for o, _ in edits), lambda m: table[m.group(0)], src)
    ns = {"__name__": module.__name__, "__file__": module.__file__}
    exec(compile(mutated, module.__file__, "exec"), ns)
    return [
        (module, name, ns[name])
        for name, obj in vars(module).items()
        if inspect.isfunction(obj) and obj.__module__ == module.__name__
    ]


def _wrap(module, name, make):
    orig = getattr(module, name)
    return (module, name, make(orig))


def _dr_fixed_point(orig):
    def mutant(variant, beta, p_ref, eps, *a, **kw):
        out = orig(variant, beta, p_ref, eps, *a, **kw)
        if variant != "dr_grpo":
            return out
        x = float(np.log(p_ref / (1 - p_ref)) + 2.0 / beta)  # 2/beta instead of 1/beta
        return [fxp.FixedPoint(float(expit(x)), x, 0.0, True, 0.0)]

    return mutant


def _mirror_on_ref(orig):
    def mutant(variant, x_prev, p_ref, beta, eps, **kw):
        swap = {"mirror": "grpo", "mirror_dr": "dr_grpo"}
        return orig(swap.get(variant, variant), x_prev, p_ref, beta, eps, **kw)

    return mutant


def _problem():
    return orc.make_problem(10, 6, seed=3)


# (name, [(module, attribute, replacement)], dynamics tests that must fail too)
MUTATIONS = [
    (
        "theory h with 2 beta",
        [_wrap(rec, "h_of_r", lambda f: lambda kk=rec.k, b=rec.beta, rr=rec.r: f(kk, 2 * b, rr))],
        [],
    ),
    (
        "theory h, h' with 2 beta and B / 2 (consistent)",
        [
            _wrap(rec, "h_of_r", lambda f: lambda kk=rec.k, b=rec.beta, rr=rec.r: f(kk, 2 * b, rr)),
            _wrap(
                rec,
                "h_prime_paper",
                lambda f: lambda hh, pp=rec.p, b=rec.beta, rr=rec.r: f(hh, pp, 2 * b, rr),
            ),
            _wrap(rec, "B_paper", lambda f: lambda pp, e: f(pp, e) / 2),
        ],
        [],
    ),
    (
        "dynamics h, h_prime with 2 beta and B / 2 (consistent)",
        [
            _wrap(dyn, "h", lambda f: lambda p, p_ref, beta, eps: f(p, p_ref, 2 * beta, eps)),
            _wrap(dyn, "h_prime", lambda f: lambda p, p_ref, beta, eps: f(p, p_ref, 2 * beta, eps)),
            _wrap(dyn, "B", lambda f: lambda p, eps: f(p, eps) / 2),
        ],
        [t_maps.test_h_closed_forms_and_boundaries],
    ),
    ("theory w+ with 2 eps", [_wrap(wts, "w_plus", lambda f: lambda pp, e: f(pp, 2 * e))], []),
    (
        "dynamics w+ with 2 eps",
        [_wrap(dyn, "w_plus", lambda f: lambda p, eps=0.0: f(p, 2 * np.asarray(eps)))],
        [lambda: t_orc.test_exact_pos_equals_scalar_recurrence(_problem(), "grpo", "ref")],
    ),
    ("theory w+ and w- swapped", [(wts, "w_plus", wts.w_minus), (wts, "w_minus", wts.w_plus)], []),
    (
        "dynamics w+ and w- swapped",
        [(dyn, "w_plus", dyn.w_minus), (dyn, "w_minus", dyn.w_plus)],
        # invisible to the unclipped exact iterates (A shifts by the constant w- - w+ on S and F),
        # caught by the weights' own test
        [lambda: t_maps.test_weight_identities(1e-5)],
    ),
    ("theory Dr. weights (1-p, 2p)", [(wts, "dr_weights", lambda p: (1 - p, 2 * p))], []),
    (
        "dynamics Dr. fixed point with 2/beta",
        [_wrap(fxp, "variant_fixed_points", _dr_fixed_point)],
        [t_fxp.test_variant_fixed_points_closed_forms],
    ),
    (
        "theory mirror anchored on pi_ref",
        [_wrap(md, "anchor_pos", lambda f: lambda v, p_prev, p_ref: f("grpo", p_prev, p_ref))],
        [],
    ),
    (
        "dynamics mirror anchored on pi_ref",
        [_wrap(dyn, "step_logit", _mirror_on_ref)],
        [t_maps.test_mirror_is_strictly_increasing_to_one],
    ),
    (
        "theory Omega without square root",
        [(wts, "omega", lambda pp, e: 1 / (pp * (1 - pp) + e))],
        [],
    ),
    (
        "dynamics Omega without square root",
        [
            _wrap(dyn, "omega", lambda f: lambda p, eps=0.0: f(p, eps) ** 2),
            _wrap(dyn, "omega_logit", lambda f: lambda x, eps: f(x, eps) ** 2),
        ],
        [t_maps.test_h_closed_forms_and_boundaries],
    ),
    (
        "theory h' without the factor 2",
        [
            _wrap(
                rec,
                "h_prime_paper",
                lambda f: lambda hh, pp=rec.p, b=rec.beta, rr=rec.r: 2 * f(hh, pp, b, rr),
            )
        ],
        [],
    ),
    (
        "dynamics B with exponent 1",
        [
            _wrap(
                dyn,
                "B",
                lambda f: (
                    lambda p, eps: f(p, eps) * np.sqrt(np.asarray(p) * (1 - np.asarray(p)) + eps)
                ),
            )
        ],
        [t_maps.test_B_is_beta_times_h_prime_at_a_fixed_point],
    ),
    (
        "theory Gibbs tilt with the wrong sign",
        [_wrap(gb, "gibbs", lambda f: lambda pio, adv, b=gb.beta: f(pio, [-a for a in adv], b))],
        [],
    ),
    (
        "theory gibbs_pos with e^{+w-/beta}",
        [_wrap(gb, "gibbs_pos", lambda f: lambda po, wp, wm, b=None: f(po, wp, -wm, b))],
        [],
    ),
    (
        "theory two-KL Renyi term with the wrong sign",
        [_wrap(tk, "delta_renyi", lambda f: lambda *a: -f(*a))],
        [],
    ),
    (
        "theory two-KL map with alpha for 1-alpha",
        [
            (
                tk,
                "two_kl_x_step",
                lambda x, lr, a, b, e, delta_r=0, mean_only=False: (
                    (1 - a) * lr
                    + a * x
                    + delta_r
                    + (1 / b if mean_only else wts.omega(1 / (1 + sp.exp(-x)), e) / b)
                ),
            )
        ],
        [],
    ),
    (
        "k3 estimator without the importance ratio",
        [_wrap(kle, "estimator_grad", lambda f: lambda th, lr, ratio=False: f(th, lr, False))],
        [],
    ),
    (
        "gibbs_kl reversed (KL(pi_ref || pi))",
        [_wrap(prd, "gibbs_kl", lambda f: lambda p, q: f(q, p))],
        [],
    ),
    (
        "beta_eff without Omega",
        [_wrap(prd, "beta_eff", lambda f: lambda p, pr, eps: f(p, pr, eps) / dyn.omega(p, eps))],
        [],
    ),
]

#: the eight mutants, as slips in the product's source
ISSUE_22 = [
    (
        "boundary no longer absorbs (logit of p_ref clipped to [1e-12, 1 - 1e-12])",
        _source(
            dyn,
            (
                "logit(np.asarray(p, float))",
                "logit(np.clip(np.asarray(p, float), 1e-12, 1 - 1e-12))",
            ),
        ),
        [],
    ),
    (
        "Delta_R with the wrong sign in step_logit",
        _source(dyn, ("np.asarray(delta_r, float) + incr", "-np.asarray(delta_r, float) + incr")),
        [],
    ),
    (
        "unstable fixed points dropped",
        _source(
            fxp,
            (
                "        out.append(FixedPoint(p, float(x), hp, abs(hp) < 1.0, res))",
                "        if abs(hp) < 1.0:\n            out.append(FixedPoint(p, float(x), hp, True, res))",
            ),
        ),
        [],
    ),
    (
        "2-cycle multiplier h'(a)^2 instead of h'(a) h'(b)",
        _source(
            fxp,
            (
                "dyn.h_prime_logit(a, beta, eps) * dyn.h_prime_logit(b, beta, eps)",
                "dyn.h_prime_logit(a, beta, eps) * dyn.h_prime_logit(a, beta, eps)",
            ),
        ),
        [],
    ),
    (
        "eps = 0 weights swapped",
        _source(
            dyn,
            ("raw = np.sqrt((1 - p) / p)", "raw = np.sqrt(p / (1 - p))"),
            ("raw = np.sqrt(p / (1 - p))", "raw = np.sqrt((1 - p) / p)"),
        ),
        [],
    ),
    (
        "oracle_sgd clipping at 1 + 2c",
        _source(
            sgd,
            (
                "np.clip(ratio, 1 - clip_eps, 1 + clip_eps)",
                "np.clip(ratio, 1 - clip_eps, 1 + 2 * clip_eps)",
            ),
        ),
        [],
    ),
    (
        "oracle Gibbs step with a doubled Omega",
        _source(
            orc,
            ("log_normalise(log_anchor + a / beta)", "log_normalise(log_anchor + 2 * a / beta)"),
        ),
        [],
    ),
    (
        "thm10 delta_n = max(TV_n - TV_{n-1}, 0)",
        _source(
            thm10,
            ("delta = tv(log_pi_sgd[1:], one_step)", "delta = np.maximum(t[1:] - t[:-1], 0.0)"),
        ),
        [],
    ),
]

#: further slips in the product's maps
PRODUCT = [
    (
        "_shift no longer keeps +-inf (boundary lost when Omega is infinite)",
        _source(dyn, ("    return np.where(np.isinf(base), base, out)\n", "    return out\n")),
        [],
    ),
    (
        "dOmega/dlogit with the wrong sign",
        _source(dyn, ("return -0.5 * one_minus_2p * v", "return 0.5 * one_minus_2p * v")),
        [],
    ),
    (
        "h_prime with exponent 1/2",
        _source(
            dyn,
            (
                "(2 * np.asarray(beta, float) * (p * (1 - p) + eps) ** 1.5)",
                "(2 * np.asarray(beta, float) * (p * (1 - p) + eps) ** 0.5)",
            ),
        ),
        [],
    ),
    (
        "B without the absolute value",
        _source(
            dyn,
            (
                "out = v * np.abs(2 * p - 1) / (2 * (v + eps) ** 1.5)",
                "out = v * (2 * p - 1) / (2 * (v + eps) ** 1.5)",
            ),
        ),
        [],
    ),
    (
        "two-KL step with alpha and 1 - alpha swapped",
        _source(
            dyn,
            (
                "base = alpha * l_ref + (1 - alpha) * x_prev",
                "base = (1 - alpha) * l_ref + alpha * x_prev",
            ),
        ),
        [],
    ),
    (
        "per-step Delta_R: the first step's value at every step",
        _source(dyn, ("d = dr[n - 1] if per_step else dr", "d = dr[0] if per_step else dr")),
        [],
    ),
    (
        "scalar H with 2 eps",
        _source(
            fxp,
            (
                "return l_ref + 1.0 / (beta * math.sqrt(v + eps))",
                "return l_ref + 1.0 / (beta * math.sqrt(v + 2 * eps))",
            ),
        ),
        [],
    ),
    (
        "fixed-point search bound 1/(2 beta sqrt eps)",
        _source(
            fxp,
            (
                "hi = l_ref + 1.0 / (beta * math.sqrt(eps))",
                "hi = l_ref + 0.5 / (beta * math.sqrt(eps))",
            ),
        ),
        [],
    ),
    (
        "two-KL fixed point derivative alpha + (1 - alpha) h'",
        _source(
            fxp,
            ("d = (1.0 - alpha) + alpha * fp.h_prime", "d = alpha + (1.0 - alpha) * fp.h_prime"),
        ),
        [],
    ),
    (
        "two-KL mean-only fixed point with 1/beta",
        _source(fxp, ("x = shifted + 1.0 / (alpha * beta)", "x = shifted + 1.0 / beta")),
        [],
    ),
    (
        "oracle two-KL anchor with alpha and 1 - alpha swapped",
        _source(
            orc,
            (
                "log_normalise(alpha * log_pi_ref + (1 - alpha) * log_pi_prev)",
                "log_normalise((1 - alpha) * log_pi_ref + alpha * log_pi_prev)",
            ),
        ),
        [],
    ),
    (
        "oracle Renyi divergence divided by 1 - a",
        _source(
            orc,
            (
                "return np.where(empty, np.nan, s / (a - 1))",
                "return np.where(empty, np.nan, s / (1 - a))",
            ),
        ),
        [],
    ),
    (
        "oracle mean-only weights swapped",
        _source(orc, ("        return 1.0 - p, p\n", "        return p, 1.0 - p\n")),
        [],
    ),
    (
        "surrogate gradient through clipped terms",
        _source(sgd, ("active = terms == ratio * adv", "active = np.ones_like(ratio, dtype=bool)")),
        [],
    ),
    (
        "surrogate k3 gradient with the wrong sign",
        _source(sgd, ("kc = (1.0 - np.exp(z)) / g_size", "kc = (np.exp(z) - 1.0) / g_size")),
        [],
    ),
]

ALL = ISSUE_22 + PRODUCT + MUTATIONS
#: ids of the mutants run by the default suite
FAST = {m[0] for m in ISSUE_22}


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
    assert len(ISSUE_22) == 8 and len(PRODUCT) >= 10
    assert set(kills) >= FAST, "run after the mutants (same module)"
    assert all(kills[n][0] for n in FAST), "an issue-22 mutant survived the theory stage"
    assert len(killed) >= 0.95 * len(kills)
