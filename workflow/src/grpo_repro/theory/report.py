"""Outputs of stage 1 (Sec. 2-5 checks): derivations.json (list of records) and derivations.md
(a table with a header line of pass counts), both written atomically (temp file + os.replace)."""

from __future__ import annotations

import json

from grpo_repro.io import write_text as atomic_write_text


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(records: list[dict], summary: dict, params: dict) -> str:
    c, e = summary["claim"], summary["erratum"]
    lines = [
        "# Stage 1: derivation checks (Mroueh, arXiv 2503.06639, Sec. 2-5, App. B-F)",
        "",
        f"**{summary['passed']}/{summary['total']} checks passed** - claims {c['passed']}/{c['total']}, "
        f"errata demonstrated {e['passed']}/{e['total']}; {summary['symbolic']} symbolic, "
        f"{summary['numeric']} numeric; {summary['seconds']} s of checking "
        f"(n_random = {params['n_random']}, tol = {params['tol']:g}, seed = {params['seed']}).",
        "",
        "Method `symbolic`: sympy proof (identity reduced to 0, sign from assumptions, exhaustive case split, "
        "induction step, or an exact counterexample). Method `numeric`: every random point within `tol`. "
        "Kind `erratum`: PASS means the paper's literal reading was shown WRONG, as documented in "
        "FORMULAS.md; the corrected statement is the related `claim`.",
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
