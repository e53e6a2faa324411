"""Command line and stage runner of stage 1 (checks of Sec. 2-5): run every check, write
derivations.json / derivations.md, log one line per check, return 1 naming the failed (or
crashed) claims and the errata not demonstrated."""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from . import failed_claims, failed_errata, run_all, summarize
from .report import write_outputs

LOG = logging.getLogger("grpo_repro.theory")


def _setup_logging(log_path=None) -> list[logging.Handler]:
    """INFO (one line per check) to the log file if given, else to stderr; stderr then gets warnings
    and the final summary only."""
    stream = logging.StreamHandler(sys.stderr)
    stream.setLevel(logging.WARNING if log_path else logging.INFO)
    handlers: list[logging.Handler] = [stream]
    if log_path:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_path, mode="w"))
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(message)s")
    for h in handlers:
        h.setFormatter(fmt)
        LOG.addHandler(h)
    LOG.setLevel(logging.INFO)
    LOG.propagate = False
    return handlers


def run_stage(
    json_path,
    md_path,
    n_random: int = 1000,
    tol: float = 1e-9,
    seed: int = 0,
    log=None,
    checks=None,
    ids=None,
    smoothing_eps: float = 1e-5,
) -> int:
    """Run the checks (all registered ones, or `checks`, restricted to `ids` if given), write both
    outputs, return the exit status (1 if a claim failed, crashed, or an erratum was not
    demonstrated)."""
    handlers = _setup_logging(log)
    try:
        t0 = time.perf_counter()
        LOG.info(
            "theory checks: n_random=%s tol=%g seed=%s smoothing_eps=%g",
            n_random,
            tol,
            seed,
            smoothing_eps,
        )
        records = run_all(
            n_random=n_random,
            tol=tol,
            seed=seed,
            checks=checks,
            ids=ids,
            smoothing_eps=smoothing_eps,
        )
        for r in records:
            LOG.info(
                "%-4s %-8s %-9s %-36s %.3fs  %s",
                "ok" if r["passed"] else "FAIL",
                r["kind"],
                r["method"],
                r["id"],
                r["seconds"],
                r["detail"],
            )
        summary = summarize(records)
        params = {"n_random": n_random, "tol": tol, "seed": seed, "smoothing_eps": smoothing_eps}
        write_outputs(records, summary, params, json_path, md_path)
        line = (
            f"theory: {summary['passed']}/{summary['total']} checks passed (claims "
            f"{summary['claim']['passed']}/{summary['claim']['total']}, errata {summary['erratum']['passed']}/"
            f"{summary['erratum']['total']}; {summary['symbolic']} symbolic, {summary['exact']} exact, "
            f"{summary['numeric']} numeric, {summary['crashed']} crashed) "
            f"in {time.perf_counter() - t0:.2f}s; wrote {json_path}, {md_path}"
        )
        LOG.info(line)
        if log:
            print(line, file=sys.stderr)
        failed, bad_errata = failed_claims(records), failed_errata(records)
        if bad_errata:
            LOG.error("errata not demonstrated: %s", ", ".join(bad_errata))
        if failed:
            LOG.error("FAILED claims: %s", ", ".join(failed))
        return 1 if failed or bad_errata else 0
    finally:
        for h in handlers:
            LOG.removeHandler(h)
            h.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grpo_repro.theory", description=__doc__)
    ap.add_argument(
        "--out", default="results/theory", help="output folder (derivations.json, derivations.md)"
    )
    ap.add_argument("--n-random", type=int, default=1000, help="random points per numeric check")
    ap.add_argument("--tol", type=float, default=1e-9, help="tolerance of numeric checks")
    ap.add_argument("--seed", type=int, default=0, help="seed of the random points")
    ap.add_argument(
        "--smoothing-eps",
        type=float,
        default=1e-5,
        help="eps of the smoothed advantage, eq. (4) (config train.smoothing_eps)",
    )
    ap.add_argument(
        "--log", default=None, help="write the per-check log to this file (stderr otherwise)"
    )
    ap.add_argument("--only", default=None, help="comma-separated check ids to run (default: all)")
    a = ap.parse_args(argv)
    out = Path(a.out)
    ids = [s.strip() for s in a.only.split(",") if s.strip()] if a.only else None
    return run_stage(
        out / "derivations.json",
        out / "derivations.md",
        a.n_random,
        a.tol,
        a.seed,
        log=a.log,
        ids=ids,
        smoothing_eps=a.smoothing_eps,
    )
