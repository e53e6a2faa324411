"""Stage 1 (Sec. 2-5): every derivation check passes, wrong claims are caught, records follow the
schema, and the rule's script writes derivations.json and derivations.md (failing on a bad claim)."""

import json
import runpy
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import yaml

from grpo_repro import theory
from grpo_repro.theory import claims, core, recurrence
from grpo_repro.theory.core import Check, Context, Outcome
from tests.helpers import ROOT

SCRIPT = ROOT / "workflow" / "scripts" / "theory_derivations.py"
CHECK_IDS = [c.id for c in theory.registry()]


def fake_snakemake(tmp: Path, theory_cfg: dict, smoothing_eps: float):
    return SimpleNamespace(
        params=SimpleNamespace(theory=theory_cfg, smoothing_eps=smoothing_eps),
        output=SimpleNamespace(json=str(tmp / "derivations.json"), md=str(tmp / "derivations.md")),
        log=[str(tmp / "logs" / "derivations.log")],
    )


@pytest.fixture(scope="module")
def stage(tmp_path_factory):
    """The rule's script run once as Snakemake runs it (injected `snakemake` object, default config)."""
    tmp = tmp_path_factory.mktemp("theory")
    full = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    cfg, eps = full["theory"], full["train"]["smoothing_eps"]
    with pytest.raises(SystemExit) as exc:
        runpy.run_path(
            str(SCRIPT),
            init_globals={"snakemake": fake_snakemake(tmp, cfg, eps)},
            run_name="__main__",
        )
    records = json.loads((tmp / "derivations.json").read_text())
    return SimpleNamespace(
        code=exc.value.code, tmp=tmp, records=records, cfg=cfg, by_id={r["id"]: r for r in records}
    )


def ctx(n=200, tol=1e-9, seed=0):
    return Context(n_random=n, tol=tol, rng=np.random.default_rng(seed))


# ------------------------------------------------------------------------------ every check passes


@pytest.mark.parametrize("check_id", CHECK_IDS)
def test_check_passes(stage, check_id):
    rec = stage.by_id[check_id]
    assert rec["passed"], f"{check_id}: {rec['detail']}"


def test_script_writes_both_files_and_exits_zero(stage):
    assert stage.code == 0
    md = (stage.tmp / "derivations.md").read_text()
    n = len(stage.records)
    assert f"**{n}/{n} checks passed**" in md
    for m in core.METHODS:  # counts per method and what is not checked, in the header
        k = sum(r["method"] == m for r in stage.records)
        assert f"{k} {m}" in md.split("| id |")[0]
    assert "Not checked here, or true by construction:" in md
    assert "## Every claim of docs/theory.md Sec. 1-4, 7 and 8" in md
    assert md.count("\n| Sec. ") == len(claims.CLAIMS)
    assert md.count("\n| `") == n  # one table row per record
    log = (stage.tmp / "logs" / "derivations.log").read_text()
    assert "checks passed" in log and "FAIL" not in log
    assert not list(stage.tmp.glob(".*.tmp"))  # atomic writes leave no temp files


# ------------------------------------------------------------------------------ record schema


def test_record_schema(stage):
    ids = [r["id"] for r in stage.records]
    assert ids == CHECK_IDS and len(set(ids)) == len(ids)
    for r in stage.records:
        assert set(core.RECORD_KEYS) <= set(r)
        assert r["kind"] in core.KINDS and r["method"] in core.METHODS
        assert isinstance(r["passed"], bool) and isinstance(r["seconds"], float)
        assert r["claim"] and r["reference"] and r["detail"]
        if r["method"] == "numeric":  # points and tolerance recorded (and stated in the detail)
            assert r["n_points"] >= 50 and r["tol"] == stage.cfg["tol"]
            assert f"over {r['n_points']} random points" in r["detail"]
        else:
            assert r["tol"] is None
    kinds = {r["kind"] for r in stage.records}
    methods = {r["method"] for r in stage.records}
    assert kinds == {"claim", "erratum"} and methods == set(core.METHODS)


def test_errata_point_to_passing_corrected_claims(stage):
    errata = [r for r in stage.records if r["kind"] == "erratum"]
    assert {r["id"] for r in errata} == {
        "err.conditional_display",
        "err.swapped_clip_symbols",
        "err.prop1_eps_zero",
    }
    for r in errata:
        assert "WRONG" in r["detail"] and r["related"]
        for rid in r["related"]:
            assert stage.by_id[rid]["kind"] == "claim" and stage.by_id[rid]["passed"]


def test_every_issue_claim_has_a_record(stage):
    wanted = [
        "adv.bernoulli_moments",
        "adv.omega",
        "adv.w_plus_decreasing",
        "adv.w_minus_increasing",
        "adv.contrastive_form",
        "adv.clip_identity",
        "gibbs.stationarity",
        "gibbs.concavity",
        "gibbs.pos_logit",
        "gibbs.h_two_forms",
        "rec.h_prime",
        "rec.h_shape",
        "rec.amplification",
        "rec.boundaries",
        "rec.h_at_one",
        "rec.stability",
        "var.mirror_increasing",
        "var.dr_grpo_one_step",
        "var.mirror_dr_arithmetic",
        "var.beta_eff",
        "var.two_kl_anchor",
        "var.two_kl_logodds",
        "var.two_kl_recurrence",
        "var.two_kl_amplification",
        "par.event_tv_bound",
        "par.tv_accumulation",
        "par.tv_can_expand",
        "par.limsup_conclusion",
        "rec.h_from_gibbs",
        "rec.several_fixed_points",
        "rec.stable_two_cycle",
        "rec.local_convergence",
        "rec.local_convergence_numeric",
        "adv.w_minus_exceeds_w_plus",
        "var.dr_weights",
        "var.two_kl_not_monotone",
        "kl.k3_plain_is_reverse",
        "kl.k3_ratio_is_forward",
        "kl.k3_plain_not_forward",
        "kl.k3_identities_numeric",
        "pred.gibbs_kl_bernoulli",
        "pred.beta_eff_closed_form",
        "pred.p_star_monotone",
        "pred.library_numeric",
        "num.maps_vs_symbolic",
        "num.recurrences_vs_symbolic",
        "num.fixed_points_vs_symbolic",
        "num.edges",
        "num.delta_r",
        "num.scalar_map",
        "num.orbits_complete",
        "num.oracle_gibbs_step",
        "num.clipped_surrogate",
        "num.thm10_delta",
        "kl.stationary_points",
        "err.prop1_eps_zero",
    ]
    assert set(wanted) <= set(stage.by_id)


# ------------------------------------------------------------------------------ the checker can fail

p, eps, beta, r = recurrence.p, recurrence.eps, recurrence.beta, recurrence.r


def test_failed_claim_fails_the_stage_and_is_named(tmp_path):
    from grpo_repro.theory.cli import run_stage

    bad = Check(
        "t.wrong_claim",
        "1 = 2",
        "none",
        "test",
        "claim",
        lambda c: Outcome(core.equal(1, 2), "symbolic", "1 - 2 != 0"),
    )
    good = next(c for c in theory.registry() if c.id == "adv.omega")
    code = run_stage(
        tmp_path / "d.json", tmp_path / "d.md", log=tmp_path / "x.log", checks=[good, bad]
    )
    assert code == 1
    assert "FAILED claims: t.wrong_claim" in (tmp_path / "x.log").read_text()
    recs = json.loads((tmp_path / "d.json").read_text())
    assert [x["passed"] for x in recs] == [True, False]
    assert "**FAIL**" in (tmp_path / "d.md").read_text()


def test_undemonstrated_erratum_fails_the_stage(tmp_path):
    from grpo_repro.theory.cli import run_stage

    err = Check(
        "t.erratum",
        "literal",
        "none",
        "test",
        "erratum",
        lambda c: Outcome(False, "symbolic", "no"),
    )
    assert (
        run_stage(tmp_path / "d.json", tmp_path / "d.md", log=tmp_path / "x.log", checks=[err]) == 1
    )
    assert "errata not demonstrated: t.erratum" in (tmp_path / "x.log").read_text()


def test_every_formulas_claim_names_registered_checks():
    ids = set(CHECK_IDS)
    sections = set()
    for sec, claim, how in claims.CLAIMS:
        sections.add(sec)
        assert claim and (isinstance(how, str) or (how and set(how) <= ids)), claim
    assert sections == {"1", "2", "3", "4", "7", "8"}
    listed = {i for *_, how in claims.CLAIMS if not isinstance(how, str) for i in how}
    # every check of the product's code is tied to a claim of the sheet
    assert {i for i in ids if i.startswith("num.")} <= listed


# ------------------------------------------------------------------------------ CLI (benchmark entry)


def test_cli_writes_both_files(tmp_path):
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "grpo_repro.theory",
            "--out",
            str(tmp_path),
            "--only",
            "adv.omega,rec.stability",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    recs = json.loads((tmp_path / "derivations.json").read_text())
    assert [x["id"] for x in recs] == ["adv.omega", "rec.stability"]
    assert (tmp_path / "derivations.md").read_text().startswith("# Stage 1")


def test_results_are_reproducible_with_the_seed():
    a = theory.run_all(
        n_random=1000, seed=3, ids=["rec.stability_numeric", "adv.clipped_contrastive_numeric"]
    )
    b = theory.run_all(
        n_random=1000, seed=3, ids=["adv.clipped_contrastive_numeric", "rec.stability_numeric"]
    )
    assert {x["id"]: x["detail"] for x in a} == {x["id"]: x["detail"] for x in b}
