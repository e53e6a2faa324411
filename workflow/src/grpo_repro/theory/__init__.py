"""Stage 1: symbolic (sympy) and numeric checks of the paper's derivations, Sec. 2-5 and App. B-F.

Modules, by section of Mroueh (arXiv 2503.06639):
  advantage   Sec. 2, eq. (4): whitening, w+ / w- / Omega, contrastive form, clipping identity
  gibbs       Thm 1, Thm 8: Gibbs optimal policy (stationarity, concavity), PoS logit update, h
  recurrence  Sec. 3, Prop. 1, Thm 3, Thm 6 / Lemma 1: h', shape, amplification, stability B
  variants    Sec. 4-5, Thm 4-5, Lemma 2-3, Thm 9: Mirror, Dr., Mirror Dr., beta_eff, two KL terms
  parametric  App. F, Thm 10: |P(A) - Q(A)| <= TV
  errata      literal readings of Sec. 2 listed as defects in FORMULAS.md (kind "erratum")
Entry point: run_all(n_random, tol, seed) -> list of records (core.RECORD_KEYS). Never imports snakemake.
"""

from __future__ import annotations

# import order = report order (section by section); importing registers the checks
from . import (
    advantage,  # noqa: F401
    errata,  # noqa: F401
    gibbs,  # noqa: F401
    parametric,  # noqa: F401
    recurrence,  # noqa: F401
    variant_maps,  # noqa: F401
)
from .core import (
    KINDS,
    METHODS,
    RECORD_KEYS,
    REGISTRY,
    Check,
    Context,
    Outcome,
    run_check,
    run_checks,
)

__all__ = [
    "run_all",
    "registry",
    "summarize",
    "failed_claims",
    "REGISTRY",
    "RECORD_KEYS",
    "KINDS",
    "METHODS",
    "Check",
    "Context",
    "Outcome",
    "run_check",
]


def registry() -> list[Check]:
    """Every registered check, in report order (section by section)."""
    return list(REGISTRY)


def run_all(
    n_random: int = 1000, tol: float = 1e-9, seed: int = 0, ids=None, checks=None
) -> list[dict]:
    """Run the registered checks (or `checks`, or only those whose id is in `ids`) and return records."""
    chosen = registry() if checks is None else list(checks)
    if ids is not None:
        wanted = set(ids)
        chosen = [c for c in chosen if c.id in wanted]
    return run_checks(chosen, n_random=n_random, tol=tol, seed=seed)


def failed_claims(records: list[dict]) -> list[str]:
    return [r["id"] for r in records if r["kind"] == "claim" and not r["passed"]]


def summarize(records: list[dict]) -> dict:
    out = {"total": len(records), "passed": sum(r["passed"] for r in records)}
    for kind in KINDS:
        sel = [r for r in records if r["kind"] == kind]
        out[kind] = {"total": len(sel), "passed": sum(r["passed"] for r in sel)}
    for method in METHODS:
        out[method] = sum(r["method"] == method for r in records)
    out["seconds"] = round(sum(r["seconds"] for r in records), 3)
    return out
