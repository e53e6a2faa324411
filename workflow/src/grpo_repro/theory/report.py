"""Outputs of stage 1 (Sec. 2-5 checks): derivations.json (list of records) and derivations.md
(a table with a header line of pass counts), both written atomically (temp file + os.replace).
The claims listed there are grpo_repro.theory.claims'."""

from __future__ import annotations

import json

from grpo_repro.io import write_text as atomic_write_text

from .claims import CLAIMS, NOT_CHECKED
from .core import CRASHED, METHOD_TEXT, METHODS


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
