"""Stage report: the theory overlay (Thm 2, 5, Sec. 5), the summary beside the paper (Sec. 6) and
the report captions."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logit

from grpo_repro.figures.registry import FAMILIES
from grpo_repro.report import amplification as amp
from grpo_repro.report import markdown, overlay, summary, tables
from grpo_repro.report import overlay as ovr
from grpo_repro.report.registry import PLOTS
from grpo_repro.report.summary_page import draw_page
from tests.helpers import ROOT
from tests.helpers.report_fixtures import make_results

VARIANTS = ["grpo", "mirror", "dr_grpo", "mirror_dr"]


# theory overlay
# ---------------------------------------------------------------------------------------------
def _runs(beta=0.5, eps=1e-2, advantage="paper"):
    cfg = {
        "train": {
            "beta": beta,
            "smoothing_eps": eps,
            "advantage": advantage,
            "num_iterations": 2,
            "prompts_per_step": 8,
            "num_generations": 8,
        }
    }
    return {v: cfg for v in VARIANTS}


def test_limits_of_each_variant():
    p = np.array([0.0, 0.2, 0.5, 1.0])
    beta, eps = 0.5, 1e-2
    x, conv = ovr.limit_logit("dr_grpo", p, beta, eps)
    assert expit(x[1:3]) == pytest.approx(expit(logit(p[1:3]) + 1 / beta))
    assert x[0] == -np.inf and x[3] == np.inf
    for v in ("mirror", "mirror_dr"):
        x, _ = ovr.limit_logit(v, p, beta, eps)
        assert list(expit(x)) == [0.0, 1.0, 1.0, 1.0]
    x, conv = ovr.limit_logit("grpo", p, beta, eps)
    assert conv.all()
    from grpo_repro.dynamics import maps as dynamics

    ps = expit(x[1:3])
    assert dynamics.h(ps, p[1:3], beta, eps) == pytest.approx(ps, abs=1e-10)  # fixed points of h
    assert (ps > p[1:3]).all()  # Thm 3


def test_limits_of_h_g_at_the_run_group_size():
    """h_G (finite group G): grpo's limit is a fixed point of logit p_ref + Omega_G(p)/beta, below
    the population's (the fixed-point stage's p*_G < p*); Dr. GRPO: + (1 - 1/G)/beta; mirror: 1."""
    from grpo_repro.dynamics import finite_group as fg

    p = np.array([0.0, 0.2, 0.5, 1.0])
    beta, eps, g = 0.5, 1e-2, 8
    x, conv = ovr.limit_logit("grpo", p, beta, eps, group_size=g)
    assert conv.all() and x[0] == -np.inf and x[3] == np.inf
    ps = expit(x[1:3])
    assert x[1:3] == pytest.approx(logit(p[1:3]) + fg.omega(ps, g, eps) / beta, abs=1e-8)
    assert (ps < expit(ovr.limit_logit("grpo", p, beta, eps)[0][1:3])).all()
    x, _ = ovr.limit_logit("dr_grpo", p, beta, eps, group_size=g)
    assert x[1:3] == pytest.approx(logit(p[1:3]) + (1 - 1 / g) / beta)
    assert list(expit(ovr.limit_logit("mirror", p, beta, eps, group_size=g)[0])) == [0, 1, 1, 1]
    x, conv = ovr.limit_logit("two_kl", p, beta, eps, group_size=g)
    assert np.isnan(x).all() and not conv.any()


@pytest.mark.parametrize("at, closer", [("p_pred_limit_G", "h_G"), ("p_pred_limit", "h")])
def test_overlay_summary_says_which_map_is_closer(at, closer, tmp_path, default_config):
    steps = [0, 60, 120]
    make_results(tmp_path, default_config, steps, n_prompts={"test": 30, "train": 10})
    entries = tables.eval_entries(str(tmp_path / "results"), ["grpo"], [0], ["test"], steps)
    long = tables.pool_seeds(tables.load_long(entries, steps))
    traj = overlay.overlay_trajectories(long, _runs(), 64, 3, 0)
    assert (traj["G"] == 8).all() and (traj["p_pred_limit_G"] <= traj["p_pred_limit"]).all()
    last = traj["step"] == traj["step"].max()
    traj.loc[last, "p_hat"] = traj.loc[last, at]  # the final checkpoint at one map's limit
    r = overlay.overlay_summary(traj).iloc[0]
    assert r["closer"] == closer and r["G"] == 8
    gaps = (r["mean_abs_gap_limit"], r["mean_abs_gap_limit_G"])
    assert min(gaps) == pytest.approx(0, abs=1e-12) and max(gaps) > 0.01


def test_iterates_follow_the_recurrences():
    p = np.array([0.1, 0.4])
    xs = ovr.iterates_logit("mirror_dr", p, 2.0, 1e-3, 3)
    assert xs[3] == pytest.approx(logit(p) + 3 / 2.0)  # arithmetic progression
    xs = ovr.iterates_logit("dr_grpo", p, 2.0, 1e-3, 3)
    assert xs[1] == pytest.approx(xs[3])  # one step to the fixed point


def test_overlay_summary_on_fabricated_run(tmp_path, default_config):
    steps = [0, 60, 120, 180, 240]
    make_results(tmp_path, default_config, steps, n_prompts={"test": 40, "train": 20})
    seeds = default_config["train"]["seeds"]
    entries = tables.eval_entries(
        str(tmp_path / "results"), VARIANTS, seeds, ["test", "train"], steps
    )
    long = tables.pool_seeds(tables.load_long(entries, steps))
    traj = overlay.overlay_trajectories(long, _runs(), 64, 5, 0)
    assert traj.groupby(["variant", "split"])["selected"].sum().div(len(steps)).eq(5).all()
    s = overlay.overlay_summary(traj)
    assert len(s) == 8
    fin = tables.final_rows(tables.with_reference(long))
    for _, r in s.iterrows():
        f = fin[(fin.variant == r.variant) & (fin.split == r.split)]
        interior = ((f.p_ref > 0) & (f.p_ref < 1)).mean()
        assert r.frac_amplified_predicted == pytest.approx(interior)  # every interior prompt rises
        assert r.frac_amplified_measured == pytest.approx((f.p_hat > f.p_ref).mean())
        assert r.n_ref_zero == (f.successes_ref == 0).sum()
        assert r.predicted_ref_zero_stays_zero
        assert -1 <= r.spearman_iter <= 1
    dr = s[(s.variant == "dr_grpo")]
    assert (
        dr.spearman_limit == dr.spearman_p_ref
    ).all()  # monotone prediction: same ranks as p_ref
    assert traj["nominal_iterations"].max() == pytest.approx(240 / 2 * 8 / 64)


def test_overlay_notes_trl_advantage():
    assert "approximation" in overlay.note("grpo", "trl")
    assert overlay.note("dr_grpo", "trl") == "" and overlay.note("grpo", "paper") == ""


# ---------------------------------------------------------------------------------------------
# summary
# ---------------------------------------------------------------------------------------------
def test_paper_comparability():
    from grpo_repro import config as cfg

    assert summary.paper_deviations(cfg.load(ROOT / "config" / "paper.yaml")) == []
    dev = {d["key"] for d in summary.paper_deviations(cfg.load(ROOT / "config" / "config.yaml"))}
    assert {"data.source", "model.name_or_path"} <= dev


def test_derivation_counts():
    recs = [
        {"id": "a", "kind": "claim", "passed": True},
        {"id": "b", "kind": "claim", "passed": False},
        {"id": "c", "kind": "erratum", "passed": True},
    ]
    c = summary.derivation_counts(recs)
    assert (c["claims_passed"], c["claims_total"], c["errata_passed"], c["errata_total"]) == (
        1,
        2,
        1,
        1,
    )
    assert c["failed"] == ["b"]


def test_summary_build_and_markdown(tmp_path, default_config):
    steps = [0, 60, 120, 180, 240]
    make_results(tmp_path, default_config, steps)
    res = tmp_path / "results"
    long = tables.load_long(
        tables.eval_entries(
            str(res), VARIANTS, default_config["train"]["seeds"], ["test", "train"], steps
        ),
        steps,
    )
    prompts = amp.final_vs_ref(long)
    mean, paired = amp.mean_by_step(long, 200, 0), amp.paired_diffs(prompts, 200, 0)
    pooled = tables.pool_seeds(long)
    ov = overlay.overlay_summary(overlay.overlay_trajectories(pooled, _runs(), 64, 3, 0))
    runs = [f"{v}/seed_{sd}" for v in VARIANTS for sd in default_config["train"]["seeds"]]
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "train_grpo_grpo.tsv").write_text("s\th:m:s\tmax_rss\n12.5\t0:00:12\t100\n")
    s = summary.build(
        mean,
        paired,
        amp.shares(prompts),
        ov,
        json.loads((res / "theory/derivations.json").read_text()),
        {v: default_config for v in VARIANTS},
        {r: res / "train" / r / "train_log.csv" for r in runs},
        default_config,
        summary.benchmarks(bench),
    )
    json.dumps(s)  # serialisable
    ref = mean[(mean.step == 0) & (mean.split == "test") & (mean.seed == "all")]["mean"].iloc[0]
    assert s["paper_comparison"]["ours"]["ref_mean_success"] == pytest.approx(ref)
    assert s["paper_comparison"]["paper"]["final_mean_success"] == 0.375
    assert not s["paper_comparison"]["comparable"]
    assert s["derivations"]["claims_passed"] == 9 and s["derivations"]["errata_total"] == 3
    assert [r["variant"] for r in s["paired_difference"]][::2] == VARIANTS  # config order
    assert s["benchmarks"][0]["seconds"] == 12.5
    assert s["train"]["grpo/seed_0"]["step"] == 240
    assert len(s["paired_difference_by_seed"]) == len(runs) * 2  # every run, both splits
    md = markdown.markdown(s)
    assert "NOT comparable" in md and "37.5%" in md and "not exact iterations" in md
    # it opens with a three-line verdict generated from the run: what ran, the gains, the theory
    head = md.splitlines()[2:5]
    assert head[0].startswith("1. **What ran: the model organism"), head
    assert head[1].startswith("2. ") and "points" in head[1] and VARIANTS[0] in head[1], head
    assert head[2] == "3. Theory: 9 / 10 claims pass.", head  # the fixture: one claim fails
    # the report's landing page: the same numbers, valid reStructuredText
    from docutils.core import publish_parts

    from grpo_repro.report.landing import landing_rst

    rst = landing_rst(s)
    grpo_test = next(
        r for r in s["paired_difference"] if r["variant"] == "grpo" and r["split"] == "test"
    )
    assert f"{100 * grpo_test['mean_final']:.1f}%" in rst and "21.0%" in rst and "37.5%" in rst
    assert f"{s['derivations']['claims_passed']} / {s['derivations']['claims_total']} claims" in rst
    if any(x["key"] == "model.name_or_path" for x in s["paper_comparison"]["deviations"]):
        assert "null (the model organism built by the pipeline)" in rst  # what null means here
    html = publish_parts(
        rst,
        writer="html",
        settings_overrides={"report_level": 2, "halt_level": 5, "warning_stream": False},
    )["body"]
    assert "system-message" not in html


@pytest.mark.parametrize("config_file", ["config.yaml", "paper.yaml"])
def test_report_captions_render(config_file):
    """Every caption in workflow/report/ renders (Jinja with snakemake.config/wildcards, then
    reStructuredText) without errors, for both configurations."""
    from types import SimpleNamespace

    from docutils.core import publish_parts
    from jinja2 import Environment, StrictUndefined

    from grpo_repro import config as cfg

    config = cfg.load(ROOT / "config" / config_file)
    sm = SimpleNamespace(
        config=config,
        wildcards=SimpleNamespace(split="test", study="main"),
        params=SimpleNamespace(),
    )
    env = Environment(undefined=StrictUndefined)
    captions = sorted((ROOT / "workflow/report").glob("*.rst"))
    assert len(captions) >= 7
    # every figure family and report plot names a caption file that is there
    named = {f.caption for f in FAMILIES} | {fig[1] for p in PLOTS for fig in p.figures}
    assert named <= {p.name for p in captions}, named - {p.name for p in captions}
    for path in captions:
        text = env.from_string(path.read_text()).render(snakemake=sm, categories={}, files={})
        html = publish_parts(
            text,
            writer="html",
            settings_overrides={"report_level": 2, "halt_level": 5, "warning_stream": False},
        )["body"]
        assert "system-message" not in html, (path.name, html)


def test_training_frame_reads_every_run(tmp_path):
    from grpo_repro.report.tables import training_frame

    logs = {}
    for run in ("grpo/seed_0", "grpo/seed_1"):
        path = tmp_path / run.replace("/", "_")
        pd.DataFrame(
            {
                "step": [1, 2, 3, 4],
                "reward": [0.2, None, 0.4, None],
                "kl": [0, 0.1, 0.2, 0.3],
                "entropy": [1.0, 0.9, 0.8, 0.7],
            }
        ).to_csv(path, index=False)
        logs[run] = path
    f = training_frame(logs)
    assert set(f["metric"]) == {"reward", "kl", "entropy"} and set(f["seed"]) == {0, 1}
    assert len(f[(f.metric == "reward") & (f.seed == 0)]) == 2  # logged at generation steps only


def test_benchmark_list_holds_only_upstream_stages(tmp_path):
    """summary.json's benchmark list: the summary's upstream stages only, sorted; a figure or
    report job still running when it is written changes nothing."""
    for rel in ("train/b.tsv", "evaluate/a.tsv", "figures/x.tsv", "report/y.tsv", "data/d.tsv"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("s\tmax_rss\n1.0\t10\n")
    got = [b["file"] for b in summary.benchmarks(tmp_path, summary.UPSTREAM_STAGES)]
    assert got == ["data/d.tsv", "evaluate/a.tsv", "train/b.tsv"]


def test_the_time_table_counts_this_runs_jobs_only(tmp_path):
    """A job finished before an interruption (its benchmark file older than this invocation's
    start) is not this run's time: the table leaves it out and says how many it left out."""
    import os

    for stage, job, seconds, age in (("train", "grpo", 30.0, 3600), ("evaluate", "ref", 7.5, 0)):
        path = tmp_path / stage / f"{job}.tsv"
        path.parent.mkdir()
        path.write_text(f"s\th:m:s\tmax_rss\n{seconds}\t0:00:01\t100\n")
        os.utime(path, (path.stat().st_mtime - age,) * 2)
    started = (tmp_path / "evaluate" / "ref.tsv").stat().st_mtime - 60
    table = summary.stage_times(tmp_path, since=started)
    assert "evaluate" in table and "7.5" in table and "train" not in table.split(":", 1)[1]
    assert "(1 jobs of earlier runs not counted)" in table
    assert "train" in summary.stage_times(tmp_path)  # no start known: every job


def test_the_report_pages_render_the_markdown_tables(tmp_path):
    """The report's summary and claim-table pages are the Markdown files rendered: every pipe
    table becomes an HTML table with the same cells, and the page is stand-alone."""
    md = tmp_path / "summary.md"
    md.write_text(
        "# Summary\n\n| variant | mean |\n|---|---:|\n| grpo | 0.42 |\n| mirror | 0.5 |\n"
    )
    out = tmp_path / "page.html"
    draw_page({"md": str(md)}, [str(out)])
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<title>summary</title>" in page
    assert page.count("<table>") == 1 and page.count("<tr>") == 3
    assert "<td>grpo</td>" in page and '<td style="text-align:right">0.42</td>' in page
    assert "<h1>Summary</h1>" in page
