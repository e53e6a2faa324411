"""docs/theory.md names the theory stage's checks: every check id it cites is one the stage runs
for some claim (grpo_repro.theory.claims.CLAIMS), and every check of that table is cited,
so the page cannot drift from what the stage tests."""

import re
from pathlib import Path

from grpo_repro.theory.claims import CLAIMS

DOC = Path(__file__).resolve().parents[3] / "docs" / "theory.md"
CHECK_ID = re.compile(r"`((?:adv|err|gibbs|var|rec|num|par|kl|fg|pred)\.[a-z0-9_]+)`")


def claimed_checks() -> set[str]:
    return {c for _, _, how in CLAIMS if not isinstance(how, str) for c in how}


def test_every_check_the_doc_cites_is_run_for_a_claim():
    cited = set(CHECK_ID.findall(DOC.read_text()))
    assert cited, "no check id found: the pattern no longer matches the page"
    assert sorted(cited - claimed_checks()) == []


def test_every_claim_check_is_cited_in_the_doc():
    assert sorted(claimed_checks() - set(CHECK_ID.findall(DOC.read_text()))) == []
