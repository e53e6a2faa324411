"""Stage 5 (final): summary numbers on fabricated tables, the theory overlay, and the regeneration
property of the rule graph (editing a plot reruns plots only, never training or evaluation)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, logit

from grpo_repro import stats
from grpo_repro.final import amplification as amp
from grpo_repro.final import overlay, summary, tables

from tests.final_fixtures import make_results

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = ["grpo", "mirror", "dr_grpo", "mirror_dr"]


# ---------------------------------------------------------------------------------------------
# fabricated tables with known numbers
# ---------------------------------------------------------------------------------------------
def _table(ids, k, n=50):
    k = np.asarray(k)
    lo, hi = stats.wilson(k, np.full_like(k, n))
    return pd.DataFrame({"prompt_id": ids, "successes": k, "samples": n, "p_hat": k / n, "ci_low": lo,
                         "ci_high": hi, "successes_lenient": k, "p_hat_lenient": k / n})


@pytest.fixture
def known(tmp_path):
    """ref successes [0, 10, 20, 30, 50] of 50; step 10: +5 each except the 0 and the 50; step 20:
    +10 each except the 0 (stays 0), prompt d drops to 25 and e stays 50."""
    ids = ["a", "b", "c", "d", "e"]
    ks = {0: [0, 10, 20, 30, 50], 10: [0, 15, 25, 35, 50], 20: [0, 20, 30, 25, 50]}
    entries = []
    for split in ("test",):
        p = tmp_path / "eval" / "ref" / split / "step_0.csv"
        p.parent.mkdir(parents=True)
        _table(ids, ks[0]).to_csv(p, index=False)
        entries.append({"variant": "ref", "split": split, "step": 0, "path": str(p)})
        for v in ("grpo", "dr_grpo"):
            for step in (10, 20):
                p = tmp_path / "eval" / v / split / f"step_{step}.csv"
                p.parent.mkdir(parents=True, exist_ok=True)
                _table(ids, ks[step]).to_csv(p, index=False)
                entries.append({"variant": v, "split": split, "step": step, "path": str(p)})
    return tables.load_long(entries, ["grpo", "dr_grpo"], [0, 10, 20]), ks


def test_eval_entries_layout():
    e = tables.eval_entries("results", ["grpo", "mirror"], ["test", "train"], [0, 5, 10])
    paths = [x["path"] for x in e]
    assert "results/eval/ref/test/step_0.csv" in paths
    assert "results/eval/grpo/train/step_10.csv" in paths
    assert not any("grpo/test/step_0" in p for p in paths)  # step 0 only under ref
    assert len(paths) == 2 * (1 + 2 * 2)


def test_long_table_shares_ref(known):
    long, ks = known
    assert set(long.columns) >= {"variant", "split", "step", "checkpoint", "prompt_id", "p_hat", "ci_low"}
    for v in ("grpo", "dr_grpo"):
        ref = long[(long.variant == v) & (long.step == 0)].sort_values("prompt_id")
        assert ref["successes"].tolist() == ks[0]
        assert (ref["source"] == "ref").all()
    assert sorted(long["checkpoint"].unique()) == [0, 1, 2]


def test_long_table_rejects_mismatched_prompts(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    _table(["x", "y"], [1, 2]).to_csv(a, index=False)
    _table(["x", "z"], [1, 2]).to_csv(b, index=False)
    entries = [{"variant": "ref", "split": "test", "step": 0, "path": str(a)},
               {"variant": "grpo", "split": "test", "step": 5, "path": str(b)}]
    with pytest.raises(ValueError, match="prompt set differs"):
        tables.load_long(entries, ["grpo"], [0, 5])


def test_eval_table_checks_columns(tmp_path):
    p = tmp_path / "t.csv"
    pd.DataFrame({"prompt_id": ["a"], "successes": [1]}).to_csv(p, index=False)
    with pytest.raises(ValueError, match="missing columns"):
        tables.read_eval_table(p)


def test_mean_by_step_known_means(known):
    long, ks = known
    m = amp.mean_by_step(long, n_boot=500, seed=0)
    for step, k in ks.items():
        row = m[(m.variant == "grpo") & (m.step == step)].iloc[0]
        assert row["mean"] == pytest.approx(np.mean(k) / 50)
        assert row["low"] <= row["mean"] <= row["high"]
        assert row["n_prompts"] == 5
    # step 0 is pi_ref for every variant: identical numbers, identical interval
    r0 = m[m.step == 0]
    assert r0["low"].nunique() == 1 and r0["high"].nunique() == 1


def test_mean_interval_is_the_stats_bootstrap():
    """A constant success rate has a degenerate interval; a known sample matches stats directly."""
    ids = [str(i) for i in range(8)]
    long = pd.DataFrame({"variant": "grpo", "split": "test", "step": 0, "checkpoint": 0, "prompt_id": ids,
                         "p_hat": 0.3, "p_hat_lenient": 0.3})
    r = amp.mean_by_step(long, 200, 0).iloc[0]
    assert (r["mean"], r["low"], r["high"]) == pytest.approx((0.3, 0.3, 0.3))


def test_final_vs_ref_sides_and_shares(known):
    long, _ = known
    pr = amp.final_vs_ref(long)
    g = pr[pr.variant == "grpo"].set_index("prompt_id")
    assert g.loc["a", "side"] == "on" and g.loc["e", "side"] == "on"
    assert g.loc["b", "side"] == "above" and g.loc["c", "side"] == "above"
    assert g.loc["d", "side"] == "below"
    assert (g["final_step"] == 20).all()
    sh = amp.shares(pr).set_index("variant").loc["grpo"]
    assert (sh.n_above, sh.n_on, sh.n_below) == (2, 2, 1)
    assert sh.share_above == pytest.approx(0.4)


def test_paired_difference_known(known):
    long, ks = known
    pd_ = amp.paired_diffs(amp.final_vs_ref(long), n_boot=2000, seed=0)
    r = pd_[pd_.variant == "grpo"].iloc[0]
    d = (np.array(ks[20]) - np.array(ks[0])) / 50  # [0, .2, .2, -.1, 0]
    assert r["mean_diff"] == pytest.approx(d.mean())
    se = d.std(ddof=1) / np.sqrt(d.size)
    assert r["se"] == pytest.approx(se)
    assert r["low_normal"] == pytest.approx(d.mean() - stats.Z95 * se)
    assert r["high_normal"] == pytest.approx(d.mean() + stats.Z95 * se)
    assert d.min() <= r["low"] <= r["mean_diff"] <= r["high"] <= d.max()
    assert r["mean_ref"] == pytest.approx(np.mean(ks[0]) / 50)
    assert r["mean_final"] == pytest.approx(np.mean(ks[20]) / 50)


def test_trajectory_selection_is_seeded():
    ids = [f"q{i}" for i in range(100)]
    a = tables.select_prompts(ids, 7, 0, "test")
    assert a == tables.select_prompts(list(reversed(ids)), 7, 0, "test")
    assert len(set(a)) == 7
    assert a != tables.select_prompts(ids, 7, 1, "test")
    assert len(tables.select_prompts(ids[:3], 7, 0, "test")) == 3


# ---------------------------------------------------------------------------------------------
# theory overlay
# ---------------------------------------------------------------------------------------------
def _runs(beta=0.5, eps=1e-2, advantage="paper"):
    cfg = {"train": {"beta": beta, "smoothing_eps": eps, "advantage": advantage, "num_iterations": 2,
                     "prompts_per_step": 8}}
    return {v: cfg for v in VARIANTS}


def test_limits_of_each_variant():
    p = np.array([0.0, 0.2, 0.5, 1.0])
    beta, eps = 0.5, 1e-2
    x, conv = overlay.limit_logit("dr_grpo", p, beta, eps)
    assert expit(x[1:3]) == pytest.approx(expit(logit(p[1:3]) + 1 / beta))
    assert x[0] == -np.inf and x[3] == np.inf
    for v in ("mirror", "mirror_dr"):
        x, _ = overlay.limit_logit(v, p, beta, eps)
        assert list(expit(x)) == [0.0, 1.0, 1.0, 1.0]
    x, conv = overlay.limit_logit("grpo", p, beta, eps)
    assert conv.all()
    from grpo_repro import dynamics
    ps = expit(x[1:3])
    assert dynamics.h(ps, p[1:3], beta, eps) == pytest.approx(ps, abs=1e-10)  # fixed points of h
    assert (ps > p[1:3]).all()  # Thm 3


def test_iterates_follow_the_recurrences():
    p = np.array([0.1, 0.4])
    xs = overlay.iterates_logit("mirror_dr", p, 2.0, 1e-3, 3)
    assert xs[3] == pytest.approx(logit(p) + 3 / 2.0)  # arithmetic progression
    xs = overlay.iterates_logit("dr_grpo", p, 2.0, 1e-3, 3)
    assert xs[1] == pytest.approx(xs[3])  # one step to the fixed point


def test_overlay_summary_on_fabricated_run(tmp_path, default_config):
    steps = [0, 60, 120, 180, 240]
    make_results(tmp_path, default_config, steps, n_prompts={"test": 40, "train": 20})
    entries = tables.eval_entries(str(tmp_path / "results"), VARIANTS, ["test", "train"], steps)
    long = tables.load_long(entries, VARIANTS, steps)
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
    assert (dr.spearman_limit == dr.spearman_p_ref).all()  # monotone prediction: same ranks as p_ref
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
    recs = [{"id": "a", "kind": "claim", "passed": True}, {"id": "b", "kind": "claim", "passed": False},
            {"id": "c", "kind": "erratum", "passed": True}]
    c = summary.derivation_counts(recs)
    assert (c["claims_passed"], c["claims_total"], c["errata_passed"], c["errata_total"]) == (1, 2, 1, 1)
    assert c["failed"] == ["b"]


def test_summary_build_and_markdown(tmp_path, default_config):
    steps = [0, 60, 120, 180, 240]
    make_results(tmp_path, default_config, steps)
    res = tmp_path / "results"
    long = tables.load_long(tables.eval_entries(str(res), VARIANTS, ["test", "train"], steps), VARIANTS, steps)
    prompts = amp.final_vs_ref(long)
    mean, paired = amp.mean_by_step(long, 200, 0), amp.paired_diffs(prompts, 200, 0)
    ov = overlay.overlay_summary(overlay.overlay_trajectories(long, _runs(), 64, 3, 0))
    bench = tmp_path / "bench"
    bench.mkdir()
    (bench / "train_grpo_grpo.tsv").write_text("s\th:m:s\tmax_rss\n12.5\t0:00:12\t100\n")
    s = summary.build(mean, paired, amp.shares(prompts), ov, json.loads((res / "theory/derivations.json").read_text()),
                      {v: default_config for v in VARIANTS},
                      {v: res / "train" / v / "train_log.csv" for v in VARIANTS}, default_config,
                      summary.benchmarks(bench))
    json.dumps(s)  # serialisable
    ref = mean[(mean.step == 0) & (mean.split == "test")]["mean"].iloc[0]
    assert s["paper_comparison"]["ours"]["ref_mean_success"] == pytest.approx(ref)
    assert s["paper_comparison"]["paper"]["final_mean_success"] == 0.375
    assert not s["paper_comparison"]["comparable"]
    assert s["derivations"]["claims_passed"] == 9 and s["derivations"]["errata_total"] == 3
    assert [r["variant"] for r in s["paired_difference"]][::2] == VARIANTS  # config order
    assert s["benchmarks"][0]["seconds"] == 12.5
    assert s["train"]["grpo"]["step"] == 240
    md = summary.markdown(s)
    assert "NOT comparable" in md and "37.5%" in md and "not exact iterations" in md


# ---------------------------------------------------------------------------------------------
# regeneration: editing a plot reruns the plot rules only (dry run on a copy of the workflow)
# ---------------------------------------------------------------------------------------------
FINAL_RULES = re.compile(r"^(final_\w+|plot_\w+)$")


def _snakemake(cwd, *args, timeout=600):
    env = {**os.environ, "PYTHONPATH": str(cwd / "workflow" / "src"), "HF_HUB_OFFLINE": "1"}
    res = subprocess.run([sys.executable, "-m", "snakemake", *args, "--configfile", "config/test.yaml"],
                         cwd=cwd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                         timeout=timeout)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
    return res.stdout + res.stderr


def _jobs(out: str) -> set:
    if "Job stats:" not in out:
        return set()
    table = out.split("Job stats:")[1].split("total")[0]
    return {m.group(1) for m in re.finditer(r"^(\w+)\s+\d+$", table, re.M)}


@pytest.fixture(scope="module")
def workflow_copy(tmp_path_factory):
    """A copy of the repository's workflow whose upstream outputs (theory, data, pi_ref, training,
    evaluation) are fabricated and marked up to date, after one real run of the final stage."""
    if not (ROOT / "workflow/src/grpo_repro/plotting/style.py").exists():
        pytest.skip("grpo_repro/plotting/style.py (shared plot style) not written yet")
    import yaml

    from grpo_repro.schedule import checkpoint_steps

    tmp = tmp_path_factory.mktemp("wf")
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    shutil.copytree(ROOT / "workflow", tmp / "workflow", ignore=ignore)
    shutil.copytree(ROOT / "config", tmp / "config")
    text = (ROOT / "Snakefile").read_text()
    rules = sorted(p.name for p in (ROOT / "workflow/rules").glob("*.smk") if p.name != "common.smk")
    for name in rules:  # the lead may not have wired every include yet
        if f"workflow/rules/{name}" not in text:
            text += f'\ninclude: "workflow/rules/{name}"\n'
    if not re.search(r"^report:", text, re.M):
        text += '\nreport: "workflow/report/workflow.rst"\n'
    (tmp / "Snakefile").write_text(text)
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    cfg["variants"] = ["grpo", "dr_grpo"]
    cfg["train"].update(max_steps=4, save_steps=2)
    cfg["plots"].update(n_bootstrap=100, n_trajectory_prompts=3)
    (tmp / "config/test.yaml").write_text(yaml.safe_dump(cfg))
    make_results(tmp, cfg, checkpoint_steps(cfg["train"], 64), n_prompts={"test": 12, "train": 8})

    # every other upstream output: an empty file (or folder), then `--touch` in DAG order
    out = _snakemake(tmp, "final_all", "-n", "--summary")
    upstream = []
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) < 6 or f[0] == "output_file" or FINAL_RULES.match(f[2]):
            continue
        upstream.append(f[0])
        path = tmp / f[0]
        if not path.exists():
            if path.suffix:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.touch()
            else:
                path.mkdir(parents=True)
    _snakemake(tmp, *upstream, "--touch", "-c1")
    pending = _jobs(_snakemake(tmp, "final_all", "-n", "--rerun-triggers", "mtime", "code"))
    assert pending and all(FINAL_RULES.match(r) or r == "final_all" for r in pending), pending
    ran = _snakemake(tmp, "final_all", "-c2", "--rerun-triggers", "mtime")
    assert "Finished" in ran or "steps (100%) done" in ran
    return tmp


@contextlib.contextmanager
def _edited(path: Path):
    """Append a comment to a file; restore its content and modification time afterwards (a
    script's mtime alone triggers its rule, an input's content is compared by checksum)."""
    original, st = path.read_text(), path.stat()
    try:
        path.write_text(original + "\n# edited by tests/test_final.py\n")
        yield
    finally:
        path.write_text(original)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _pending(tmp) -> set:
    return _jobs(_snakemake(tmp, "final_all", "-n", "--rerun-triggers", "mtime", "code")) - {"final_all"}


def test_plot_script_edit_reruns_only_plots(workflow_copy):
    assert _pending(workflow_copy) == set()
    with _edited(workflow_copy / "workflow/scripts/plots_trajectories.py"):
        jobs = _pending(workflow_copy)
    assert jobs == {"plot_trajectories"}
    assert _pending(workflow_copy) == set()


def test_restyle_reruns_every_plot_and_no_compute(workflow_copy):
    with _edited(workflow_copy / "workflow/src/grpo_repro/final/plots.py"):
        jobs = _pending(workflow_copy)
    assert jobs == {"plot_trajectories", "plot_amplification_mean", "plot_amplification", "plot_overlay",
                    "plot_summary_table"}
    with _edited(workflow_copy / "workflow/src/grpo_repro/plotting/style.py"):
        jobs = _pending(workflow_copy)
    assert jobs and all(r.startswith("plot_") for r in jobs), jobs


def test_compute_edit_never_reruns_training(workflow_copy):
    with _edited(workflow_copy / "workflow/scripts/final_amplification.py"):
        jobs = _pending(workflow_copy)
    assert {"final_amplification", "final_summary", "plot_amplification"} <= jobs
    assert all(FINAL_RULES.match(r) for r in jobs), jobs
    assert not jobs & {"train_grpo", "evaluate_checkpoint", "train_reference", "prepare_data"}


def test_report_builds(workflow_copy):
    tmp = workflow_copy
    _snakemake(tmp, "final_all", "--report", "results/report.html")
    html = (tmp / "results/report.html").read_text()
    assert "Figure 3" in html and "not exact iterations" in html
    assert "Reproduction of Mroueh" in html  # the workflow description (Snakefile `report:`)
    assert "summary_table.html" in html
    assert "System Message" not in html  # every caption is valid reStructuredText
    summary_json = json.loads((tmp / "results/summary.json").read_text())
    assert summary_json["config"]["variants"] == ["grpo", "dr_grpo"]
    for split in ("test", "train"):
        for stem in ("trajectories", "amplification_scatter", "amplification_hist", "overlay"):
            assert (tmp / f"results/plots/{stem}_{split}.png").stat().st_size > 0
            assert (tmp / f"results/plots/{stem}_{split}.pdf").stat().st_size > 0


@pytest.mark.parametrize("config_file", ["config.yaml", "paper.yaml"])
def test_report_captions_render(config_file):
    """Every caption in workflow/report/ renders (Jinja with snakemake.config/wildcards, then
    reStructuredText) without errors, for both configurations."""
    from types import SimpleNamespace

    from docutils.core import publish_parts
    from jinja2 import Environment, StrictUndefined

    from grpo_repro import config as cfg

    config = cfg.load(ROOT / "config" / config_file)
    sm = SimpleNamespace(config=config, wildcards=SimpleNamespace(split="test"), params=SimpleNamespace())
    env = Environment(undefined=StrictUndefined)
    captions = sorted((ROOT / "workflow/report").glob("*.rst"))
    assert len(captions) >= 7
    for path in captions:
        text = env.from_string(path.read_text()).render(snakemake=sm, categories={}, files={})
        html = publish_parts(text, writer="html",
                             settings_overrides={"report_level": 2, "halt_level": 5, "warning_stream": False})["body"]
        assert "system-message" not in html, (path.name, html)
