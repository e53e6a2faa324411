"""Outputs of stage 1 (Sec. 2-5 checks): derivations.json (list of records) and derivations.md
(a table with a header line of pass counts), both written atomically (temp file + os.replace)."""

from __future__ import annotations

import json

from grpo_repro.io import write_text as atomic_write_text

from .core import METHOD_TEXT, METHODS

#: what stage 1 does NOT check (listed in derivations.md)
NOT_CHECKED = (
    "Lemma 3 / Thm 9 are proven for K = 4 outcomes (2 successes, 2 failures) and checked "
    "numerically for K in 2..8, not proven for general K; the other finite-outcome identities "
    "likewise hold for the stated K (K-independent arguments, not formalised).",
    "Prop. 1's non-uniqueness, the stable 2-cycle, Thm 6's local convergence and the two-KL "
    "non-monotonicity are certified at stated parameters (method exact), not over parameter "
    "regions; local convergence is also checked numerically at random parameters.",
    "Thm 10 is checked as a statement about sequences (assumption => conclusion, tightness); on "
    "sample-based GRPO it is measured in the figures stage (oracle_sgd_thm10.csv), where its "
    "assumption often fails (delta* >= 1); neural (non-tabular) policies are not checked.",
    "The stationary points of GRPO's gradient dynamics with TRL's corrected k3 estimator "
    "(last sentence of FORMULAS.md Sec. 7) and the experiment of Sec. 6 are not checked here.",
)


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(records: list[dict], summary: dict, params: dict) -> str:
    c, e = summary["claim"], summary["erratum"]
    lines = [
        "# Stage 1: derivation checks (Mroueh, arXiv 2503.06639, Sec. 2-5, App. B-F)",
        "",
        f"**{summary['passed']}/{summary['total']} checks passed** - claims {c['passed']}/{c['total']}, "
        f"errata demonstrated {e['passed']}/{e['total']}; "
        + ", ".join(f"{summary[m]} {m}" for m in METHODS)
        + f"; {summary['seconds']} s of checking "
        f"(n_random = {params['n_random']}, tol = {params['tol']:g}, seed = {params['seed']}).",
        "",
        "How each claim is checked (column `method`; numeric rows give their points and tolerance "
        "in `detail`):",
        "",
        *[f"- `{m}` ({summary[m]} checks): {METHOD_TEXT[m]}." for m in METHODS],
        "",
        "Kind `erratum`: PASS means the paper's literal reading was shown WRONG, as documented in "
        "FORMULAS.md; the corrected statement is the related `claim`. Every check can fail: "
        "tests/unit/theory feeds each one a wrong claim or a mutated formula.",
        "",
        "Not checked here:",
        "",
        *[f"- {t}" for t in NOT_CHECKED],
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
