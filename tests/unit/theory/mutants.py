"""The mutants of the theory stage's mutation test (tests/unit/theory/test_mutations.py): how a
patch is made (a function replaced everywhere, a product module recompiled from edited source) and
MUTATIONS, functions of grpo_repro.dynamics and of the theory's own formulas replaced."""

import inspect
import re
import sys

import numpy as np
import sympy as sp
from scipy.special import expit

from grpo_repro.dynamics import fixed_points as fxp
from grpo_repro.dynamics import kl_estimators as kle
from grpo_repro.dynamics import maps as dyn
from grpo_repro.dynamics import oracle as orc
from grpo_repro.dynamics import prediction as prd
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
