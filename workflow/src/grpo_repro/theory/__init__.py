"""Stage 1: symbolic (sympy) and numeric checks of the paper's derivations, Sec. 2-5 and App. B-F.

Modules, by section of Mroueh (arXiv 2503.06639):
  weights     Sec. 2, eq. (4), Sec. 5: whitening, w+ / w- / Omega, Dr. weights from A = r - p
  clipping    Sec. 2.2-2.3: weighted contrastive form, clipping identity; the literal readings of
              Sec. 2 listed as defects in docs/theory.md (kind "erratum")
  gibbs       Thm 1, Thm 8: Gibbs optimal policy (stationarity, concavity), PoS, h derived
  recurrence  Sec. 3, Prop. 1, Thm 3, Thm 6 / Lemma 1: h tied to gibbs, h', shape, amplification, B
  orbits      Prop. 1, Thm 6: several fixed points, a stable 2-cycle, local convergence (intervals)
  mirror_dr   Sec. 4-5, Thm 4-5: Mirror, Dr., Mirror Dr. (derived one-step maps), beta_eff
  two_kl      Sec. 5, Lemma 2-3, Thm 9: two KL terms, amplification, fixed points, no monotonicity
  parametric  App. F, Thm 10: event/TV lemma, TV accumulation from the iterates, limsup bound
  kl_estimator docs/theory.md Sec. 7: gradients of TRL's k3 estimator, plain and ratio-corrected
  prediction  fixed-point predictions (dynamics.prediction): Gibbs KL, beta_eff, p* monotone in p_ref
  finite_group docs/theory.md Sec. 8: finite group size G (Omega_G -> Omega, Dr. GRPO's (G-1)/G law,
              brute-force weights via the trainer's advantage, the oracle's stationary p*_G)
  numerics_*  the product's code (grpo_repro.dynamics: maps, fixed points and 2-cycles, oracle,
              clipped surrogate, Thm 10 measurement) against the checked symbolic formulas,
              at random points, at the edges (boundaries, eps = 0, Delta_R != 0) and by
              completeness against an independent scan
Entry point: run_all(n_random, tol, seed) -> list of records (core.RECORD_KEYS). Never imports snakemake.
"""

from __future__ import annotations

# import order = report order (section by section); importing registers the checks
# isort: off
from . import (  # noqa: F401
    weights,
    clipping,
    gibbs,
    recurrence,
    orbits,
    mirror_dr,
    two_kl,
    parametric,
    kl_estimator,
    prediction,
    finite_group,
    numerics_maps,
    numerics_edges,
    numerics_oracle,
)

# isort: on
from .core import CRASHED, KINDS, METHODS, REGISTRY, Check, run_check


def registry() -> list[Check]:
    """Every registered check, in report order (section by section)."""
    return list(REGISTRY)


def run_all(
    n_random: int = 1000,
    tol: float = 1e-9,
    seed: int = 0,
    ids=None,
    checks=None,
    smoothing_eps: float = 1e-5,
) -> list[dict]:
    """Run the registered checks (or `checks`, or only those whose id is in `ids`) and return
    records; `smoothing_eps`: the pipeline's eq. (4) eps (config train.smoothing_eps)."""
    chosen = registry() if checks is None else list(checks)
    if ids is not None:
        wanted = set(ids)
        chosen = [c for c in chosen if c.id in wanted]
    return [run_check(c, n_random, tol, seed, smoothing_eps) for c in chosen]


def failed_claims(records: list[dict]) -> list[str]:
    return [r["id"] for r in records if r["kind"] == "claim" and not r["passed"]]


def failed_errata(records: list[dict]) -> list[str]:
    """Errata whose literal reading was not shown wrong (the documented defect is not demonstrated)."""
    return [r["id"] for r in records if r["kind"] == "erratum" and not r["passed"]]


def summarize(records: list[dict]) -> dict:
    out = {"total": len(records), "passed": sum(r["passed"] for r in records)}
    for kind in KINDS:
        sel = [r for r in records if r["kind"] == kind]
        out[kind] = {"total": len(sel), "passed": sum(r["passed"] for r in sel)}
    for method in (*METHODS, CRASHED):
        out[method] = sum(r["method"] == method for r in records)
    out["seconds"] = round(sum(r["seconds"] for r in records), 3)
    return out
