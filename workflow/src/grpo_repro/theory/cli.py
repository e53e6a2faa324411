"""Command line and stage runner of stage 1 (checks of Sec. 2-5): run every check, write
derivations.json / derivations.md (a table with a header line of pass counts, both written
atomically), log one line per check, return 1 naming the failed (or
crashed) claims and the errata not demonstrated."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from grpo_repro.io import write_text as atomic_write_text

from . import failed_claims, failed_errata, run_all, summarize
from .claims import CLAIMS, NOT_CHECKED
from .core import CRASHED, METHOD_TEXT, METHODS

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


def claims_table(records: list[dict]) -> list[str]:
    """Markdown rows: each docs/theory.md claim with its checks' methods and results."""
    by_id = {r["id"]: r for r in records}
    rows = ["| docs/theory.md | claim | checks | methods | result |", "|---|---|---|---|---|"]
    for sec, claim, how in CLAIMS:
        if isinstance(how, str):
            rows.append(f"| Sec. {sec} | {_cell(claim)} | - | not checked: {_cell(how)} | - |")
            continue
        recs = [by_id[i] for i in how if i in by_id]
        missing = [i for i in how if i not in by_id]
        methods = ", ".join(sorted({r["method"] for r in recs}))
        ok = recs and not missing and all(r["passed"] for r in recs)
        result = (
            "PASS" if ok else "**FAIL**" + (f" (not run: {', '.join(missing)})" if missing else "")
        )
        ids = ", ".join(f"`{i}`" for i in how)
        rows.append(f"| Sec. {sec} | {_cell(claim)} | {ids} | {methods or '-'} | {result} |")
    return rows


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(records: list[dict], summary: dict, params: dict) -> str:
    c, e = summary["claim"], summary["erratum"]
    lines = [
        "# Stage 1: derivation checks (Mroueh, arXiv 2503.06639, Sec. 2-5, App. B-F)",
        "",
        f"**{summary['passed']}/{summary['total']} checks passed** - claims {c['passed']}/{c['total']}, "
        f"errata demonstrated {e['passed']}/{e['total']}; "
        + ", ".join(f"{summary[m]} {m}" for m in (*METHODS, CRASHED))
        + f"; {summary['seconds']} s of checking "
        f"(n_random = {params['n_random']}, tol = {params['tol']:g}, seed = {params['seed']}, "
        f"smoothing eps = {params['smoothing_eps']:g}).",
        "",
        "How each claim is checked (column `method`; numeric rows give their points and tolerance "
        "in `detail`):",
        "",
        *[f"- `{m}` ({summary[m]} checks): {METHOD_TEXT[m]}." for m in (*METHODS, CRASHED)],
        "",
        "Kind `erratum`: PASS means the paper's literal reading was shown WRONG, as documented in "
        "docs/theory.md; the corrected statement is the related `claim`. Every check can fail: "
        "tests/unit/theory feeds each one a wrong claim or a mutated formula.",
        "",
        "Not checked here, or true by construction:",
        "",
        *[f"- {t}" for t in NOT_CHECKED],
        "",
        "## Every claim of docs/theory.md Sec. 1-4, 7 and 8, and how it is checked",
        "",
        *claims_table(records),
        "",
        "## Checks",
        "",
        "| id | kind | reference | claim | method | result | detail | s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        result = "PASS" if r["passed"] else "**FAIL**"
        if r["kind"] == "erratum":
            result += " (literal reading wrong)" if r["passed"] else " (not demonstrated)"
        detail = (
            r["detail"].rstrip(".")
            + "."
            + (f" Related: {', '.join(r['related'])}." if r.get("related") else "")
        )
        lines.append(
            f"| `{r['id']}` | {r['kind']} | {_cell(r['reference'])} | {_cell(r['claim'])} | "
            f"{r['method']} | {result} | {_cell(detail)} | {r['seconds']:.2f} |"
        )
    return "\n".join(lines) + "\n"


def write_outputs(records: list[dict], summary: dict, params: dict, json_path, md_path) -> None:
    atomic_write_text(json_path, json.dumps(records, indent=2) + "\n")
    atomic_write_text(md_path, to_markdown(records, summary, params))
