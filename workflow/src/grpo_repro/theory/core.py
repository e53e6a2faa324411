"""Check registry, proof helpers and runner shared by the theory modules (paper Sec. 2-5, App. B-F).

Every claim of the paper that stage 1 verifies is a registered `Check`. A check returns an
`Outcome` (passed, method, detail); `run_all()` turns each into a record with the keys
RECORD_KEYS. Methods (METHOD_TEXT): `symbolic` (sympy proof for all parameter values: an identity
reduced to 0, a sign proven from assumptions, an exhaustive case split, an induction step);
`exact` (a statement about stated values - a witness or a counterexample - evaluated in exact
rational arithmetic or certified by interval arithmetic with outward rounding, mpmath.iv); or
`numeric` (>= n_random random points, explicit tolerance, both in the record); a check that raises
is recorded with method `crashed` (and fails). Kinds: `claim` (a statement of the
paper, possibly as corrected in docs/theory.md) and `erratum` (a literal reading of the paper's
text that docs/theory.md lists as defective; passed=True means it was shown wrong, as documented).
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import sympy as sp

KINDS = ("claim", "erratum")
METHODS = ("symbolic", "exact", "numeric")
#: method of a record whose check raised (passed = False; never counted as a proof method)
CRASHED = "crashed"
METHOD_TEXT = {
    "symbolic": "sympy proof for all parameter values (identity reduced to 0, sign from the "
    "assumptions, exhaustive case split, induction from a derived map)",
    "exact": "a statement about stated values (witness or counterexample) in exact rational "
    "arithmetic or certified interval arithmetic (mpmath.iv, outward rounding)",
    "numeric": "every one of n_points random points within the tolerance tol",
    CRASHED: "the check raised an exception (recorded as failed, with the error in `detail`)",
}
RECORD_KEYS = (
    "id",
    "claim",
    "reference",
    "section",
    "kind",
    "method",
    "passed",
    "detail",
    "seconds",
    "n_points",
    "tol",
    "related",
)


@dataclass(frozen=True)
class Context:
    """What a check may use: the number of random points, the tolerance, its own RNG and the
    smoothing eps of the pipeline's advantage (config train.smoothing_eps, eq. (4))."""

    n_random: int = 1000
    tol: float = 1e-9
    rng: np.random.Generator = np.random.default_rng(0)
    smoothing_eps: float = 1e-5


@dataclass(frozen=True)
class Outcome:
    passed: bool
    method: str
    detail: str
    n_points: int | None = None


@dataclass(frozen=True)
class Check:
    id: str
    claim: str
    reference: str
    section: str
    kind: str
    func: Callable[[Context], Outcome]
    related: tuple[str, ...] = ()


REGISTRY: list[Check] = []


def register(
    id: str,
    claim: str,
    reference: str,
    section: str,
    kind: str = "claim",
    related: tuple[str, ...] = (),
):
    """Decorator: add `func(ctx) -> Outcome` to the registry under `id` (`related`: ids of the
    corrected statements an erratum refers to)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")

    def deco(func):
        if any(c.id == id for c in REGISTRY):
            raise ValueError(f"duplicate check id {id!r}")
        REGISTRY.append(Check(id, claim, reference, section, kind, func, tuple(related)))
        return func

    return deco


def check_rng(seed: int, check_id: str) -> np.random.Generator:
    """Per-check generator: independent of the order and subset of checks run."""
    return np.random.default_rng([int(seed), zlib.crc32(check_id.encode())])


def run_check(
    check: Check,
    n_random: int = 1000,
    tol: float = 1e-9,
    seed: int = 0,
    smoothing_eps: float = 1e-5,
) -> dict:
    ctx = Context(
        n_random=int(n_random),
        tol=float(tol),
        rng=check_rng(seed, check.id),
        smoothing_eps=float(smoothing_eps),
    )
    t0 = time.perf_counter()
    try:
        out = check.func(ctx)
        if out.method not in METHODS:
            raise ValueError(f"unknown method {out.method!r}")
    except Exception as err:  # a crashing check is a failed check, never a crashed stage
        out = Outcome(False, CRASHED, f"check raised {type(err).__name__}: {err}")
    return {
        "id": check.id,
        "claim": check.claim,
        "reference": check.reference,
        "section": check.section,
        "kind": check.kind,
        "method": out.method,
        "passed": bool(out.passed),
        "detail": out.detail,
        "seconds": round(time.perf_counter() - t0, 4),
        "n_points": out.n_points,
        "tol": float(tol) if out.method == "numeric" else None,
        "related": list(check.related),
    }


# ----------------------------------------------------------------------------- symbolic helpers


def is_zero(expr) -> bool:
    """True if `expr` is identically 0, by cheap targeted rewrites (no blind simplify on big trees);
    False at once where a point shows it is not (`nonzero_somewhere`: a wrong claim fails fast)."""
    expr = sp.sympify(expr)
    if expr == 0 or sp.expand(expr) == 0:
        return True
    if nonzero_somewhere(expr):
        return False
    for step in (
        lambda e: sp.expand(e, power_exp=True, power_base=True, log=True, force=True),
        lambda e: sp.cancel(sp.together(e)),
        lambda e: sp.cancel(sp.expand(e, power_exp=True, power_base=True, log=True, force=True)),
    ):
        if step(expr) == 0:
            return True
    if log_linear_zero(expr):
        return True
    if sp.count_ops(expr) < 150:
        return sp.simplify(expr) == 0
    return False


#: the probe points of nonzero_somewhere: every symbol in (0.1, 0.45), where probabilities, their
#: complements, betas, logits and 1 - 2p are all positive (no branch cut of log or sqrt is crossed)
PROBE_POINTS = (0.13, 0.29, 0.41, 0.17, 0.37, 0.23, 0.31, 0.11, 0.43, 0.19)


def nonzero_somewhere(expr) -> bool:
    """True if `expr` is real and clearly non-zero (|value| > 1e-8 at 20 digits) at each of three
    points in the region above (integer symbols 2-4), so it is not identically 0. Never True for an
    identity; False when unsure (a non-real symbol, a function, a complex or non-finite value)."""
    syms = sorted(expr.free_symbols, key=sp.default_sort_key)
    if any(s.is_real is False for s in syms):
        return False
    for shift in range(3):
        point = {}
        for i, s in enumerate(syms):
            v = PROBE_POINTS[(i + 3 * shift) % len(PROBE_POINTS)]
            if s.is_integer:
                point[s] = sp.Integer(2 + (i + shift) % 3)
            elif s.is_nonpositive:
                point[s] = sp.Float(-v)
            else:
                point[s] = sp.Float(v)
        try:
            value = complex(expr.evalf(20, subs=point))
        except (TypeError, ValueError, ZeroDivisionError, OverflowError):
            return False
        if not (np.isfinite(value.real) and abs(value.imag) < 1e-12 and abs(value.real) > 1e-8):
            return False
    return True


def log_linear_zero(expr) -> bool:
    """Expand logs (positive arguments), then treat every remaining log(...) as an independent
    symbol and cancel: proves identities that are linear in logarithms of sums."""
    e = sp.expand(sp.expand_log(sp.expand_power_base(expr, force=True), force=True))
    logs = sorted(e.atoms(sp.log), key=sp.default_sort_key)
    if not logs:
        return False
    names = {lg: sp.Dummy(f"L{i}") for i, lg in enumerate(logs)}
    return sp.cancel(sp.together(e.xreplace(names))) == 0


def equal(lhs, rhs) -> bool:
    return is_zero(sp.sympify(lhs) - sp.sympify(rhs))


def positive(expr) -> bool:
    """Prove expr > 0 from the symbols' assumptions (after putting it over a common denominator)."""
    expr = sp.sympify(expr)
    for e in (expr, sp.cancel(sp.together(expr)), sp.factor(expr)):
        if e.is_positive:
            return True
        num, den = sp.fraction(sp.together(e))
        num, den = sp.expand(num), sp.expand(den)
        if (num.is_positive and den.is_positive) or (num.is_negative and den.is_negative):
            return True
    return False


def positive_on_unit_interval(expr, p: sp.Symbol) -> bool:
    """Prove expr(p) > 0 for all p in (0,1): substitute p = t/(1+t), t > 0 (a bijection onto (0,1))."""
    t = sp.Symbol("t_unit", positive=True)
    return positive(sp.cancel(sp.together(sp.sympify(expr).subs(p, t / (1 + t)))))


def reduce_mod_square(expr, r: sp.Symbol, square) -> sp.Expr:
    """Rewrite a rational function of r using r**2 = square (r = sqrt(square)); numerator and
    denominator are reduced by polynomial division in r."""
    num, den = sp.fraction(sp.cancel(sp.together(expr)))
    rel = sp.Poly(r**2 - square, r)
    num = sp.Poly(num, r).rem(rel).as_expr()
    den = sp.Poly(den, r).rem(rel).as_expr()
    return sp.cancel(num / den)


def total_derivative(expr, x: sp.Symbol, chain: dict) -> sp.Expr:
    """d expr / dx where the symbols in `chain` depend on x with the given derivatives."""
    return sp.diff(expr, x) + sum(sp.diff(expr, s) * ds for s, ds in chain.items())


def sigma(z):
    return 1 / (1 + sp.exp(-z))


def logit(p):
    return sp.log(p / (1 - p))


def unit(name):
    """A value in (0,1) parametrised as u/(1+u), u > 0."""
    u = sp.Symbol(name, positive=True)
    return u / (1 + u)


# ----------------------------------------------------------------------------- numeric helpers


def numeric_outcome(err: np.ndarray, tol: float, what: str, n_points: int) -> Outcome:
    """Pass if every entry of err (a non-negative error, or a violation amount) is <= tol."""
    err = np.asarray(err, dtype=float)
    worst = float(np.max(err)) if err.size else float("nan")  # nan if any entry is nan
    ok = bool(np.isfinite(worst)) and worst <= tol
    return Outcome(
        ok,
        "numeric",
        f"{what}: max error {worst:.3g} over {n_points} random points (tol {tol:g})",
        n_points,
    )


def iv_function(expr, symbols, dps: int = 50):
    """A callable evaluating the sympy `expr` in mpmath interval arithmetic (outward rounding;
    rational constants become exact interval quotients), arguments as `symbols`."""
    from mpmath import iv

    iv.dps = dps
    mods = [{"mpf": iv.mpf, "exp": iv.exp, "sqrt": iv.sqrt, "log": iv.log}, "mpmath"]
    return sp.lambdify(symbols, expr, modules=mods)


def iv_of(value):
    """An mpmath interval enclosing `value` (a sympy Rational / int exactly, a string as decimal)."""
    from mpmath import iv

    q = sp.Rational(value)
    return iv.mpf(int(q.p)) / iv.mpf(int(q.q))


def log_uniform(rng: np.random.Generator, lo: float, hi: float, n: int) -> np.ndarray:
    return np.exp(rng.uniform(np.log(lo), np.log(hi), n))
