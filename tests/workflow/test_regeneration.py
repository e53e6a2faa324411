"""Regeneration (stage report): on a copy of the workflow whose upstream outputs are fabricated, editing a
plot script or the plotting code reruns plot rules only, editing a compute script reruns the report
stage and never training or evaluation, and the HTML report builds."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest

from tests.workflow.conftest import REPORT_RULES, _jobs, _snakemake


@contextlib.contextmanager
def _edited(path: Path):
    """Append a comment to a file; restore its content and modification time afterwards (a
    script's mtime alone triggers its rule, an input's content is compared by checksum)."""
    original, st = path.read_text(), path.stat()
    try:
        path.write_text(original + "\n# edited by tests/workflow/test_regeneration.py\n")
        yield
    finally:
        path.write_text(original)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _pending(tmp) -> set:
    return _jobs(_snakemake(tmp, "report_all", "-n", "--rerun-triggers", "mtime", "code")) - {
        "report_all"
    }


PLOT_RULES = {
    "report_plot_training",
    "report_plot_trajectories",
    "report_plot_amplification_mean",
    "report_plot_amplification",
    "report_plot_overlay",
    "report_plot_theory_table",
    "report_plot_summary_table",
    "report_plot_temperature",
    "report_plot_pass_at_k",
}
TEMPERATURE_PLOTS = {"report_plot_temperature", "report_plot_pass_at_k"}  # plot_temperature.py
HTML_TABLES = {"report_plot_summary_table", "report_plot_theory_table"}
# the landing page embeds the temperature picture: it follows report_plot_temperature (a page that
# shows a plot, never a compute rule)
LANDING = {"report_landing"}
# the compact fixed-point study's figure (the landing page embeds it too), drawn with the style
FIXED_POINT_PLOT = {"fixed_point_plot"}


def test_plot_script_edit_reruns_only_plots(report_workflow):
    assert _pending(report_workflow) == set()
    with _edited(report_workflow / "workflow/scripts/report_plot.py"):
        jobs = _pending(report_workflow)
    assert jobs == PLOT_RULES | LANDING
    assert _pending(report_workflow) == set()


def test_restyle_reruns_every_plot_and_no_compute(report_workflow):
    figures = PLOT_RULES - HTML_TABLES  # the rules that draw with matplotlib
    with _edited(report_workflow / "workflow/src/grpo_repro/style.py"):  # the shared plot style
        assert _pending(report_workflow) == figures | FIXED_POINT_PLOT | LANDING
    with _edited(report_workflow / "workflow/src/grpo_repro/report/plots.py"):
        assert _pending(report_workflow) == figures - TEMPERATURE_PLOTS
    with _edited(report_workflow / "workflow/src/grpo_repro/report/plot_temperature.py"):
        assert _pending(report_workflow) == TEMPERATURE_PLOTS | LANDING


@pytest.mark.slow  # runs the figures stage for real (about 40 s; the report's click-through shares it)
def test_restyle_reruns_the_figures_plot_rules_only(figures_run):
    """The figures stage run for real, then the shared style edited: only its plot rules rerun."""

    def pending() -> set:
        return _jobs(_snakemake(figures_run, "figures_all", "-n")) - {"figures_all"}

    assert pending() == set()
    with _edited(figures_run / "workflow/src/grpo_repro/style.py"):
        jobs = pending()
    assert jobs and all(j.startswith("figures_plot_") for j in jobs), jobs


def test_compute_edit_never_reruns_training(report_workflow):
    with _edited(report_workflow / "workflow/scripts/report_amplification.py"):
        jobs = _pending(report_workflow)
    assert {"report_amplification", "report_summary", "report_plot_amplification"} <= jobs
    assert all(REPORT_RULES.match(r) for r in jobs), jobs
    assert not jobs & {
        "train_grpo",
        "evaluate_run",
        "evaluate_reference",
        "train_reference",
        "data_prepare",
    }


def test_report_builds(report_workflow):
    tmp = report_workflow
    _snakemake(tmp, "report_all", "--report", "results/report.html")
    html = (tmp / "results/report.html").read_text()
    assert "Figure 3" in html and "not exact iterations" in html
    assert "reproduced end to end" in html  # the workflow description (Snakefile `report:`)
    assert "landing-picture" in html  # the success-against-temperature picture leads it
    assert "law-picture" in html and "Fixed-point law" in html  # the compact study beside it
    assert "summary_table.html" in html and "theory_table.html" in html
    assert "training_curves.png" in html
    assert "System Message" not in html  # every caption is valid reStructuredText
    summary_json = json.loads((tmp / "results/summary.json").read_text())
    assert summary_json["config"]["variants"] == ["grpo", "dr_grpo"]
    for split in ("test", "train"):
        for stem in ("trajectories", "amplification_scatter", "amplification_hist", "overlay"):
            assert (tmp / f"results/report/{stem}_{split}.png").stat().st_size > 0
            assert (tmp / f"results/report/{stem}_{split}.pdf").stat().st_size > 0


def _what_ran(landing: Path) -> str:
    """The landing page's first line of text: what ran, with its sizes."""
    return next(x for x in landing.read_text().splitlines() if x.startswith("**What ran"))


@pytest.mark.slow  # a second report in its own run directory (about 25 s)
def test_each_run_directorys_report_is_its_own(report_workflow):
    """Two run directories (`-d`) beside the checkout's own results/: each report's landing page
    is its run's, its headline the one its own summary.json gives (the landing page was resolved
    from the checkout once, so every report showed the checkout's run or none)."""
    import shutil

    tmp = report_workflow
    first_lines = {}
    for name, samples in (("a", 37), ("b", 41)):
        run = tmp / "runs" / name
        shutil.rmtree(run, ignore_errors=True)
        shutil.copytree(tmp / "results", run / "results")
        shutil.copytree(tmp / ".snakemake" / "metadata", run / ".snakemake" / "metadata")
        summary = json.loads((run / "results/summary.json").read_text())
        summary["config"]["eval"]["samples"] = samples  # this run's headline: its own count
        (run / "results/summary.json").write_text(json.dumps(summary))
        d = ["-d", str(run)]
        rerun = ["--forcerun", "report_landing", "--rerun-triggers", "mtime"]
        _snakemake(tmp, *d, "results/report/landing.rst", "-c1", *rerun)
        _snakemake(tmp, *d, "report_all", "--report", "results/report.html")
        html = (run / "results/report.html").read_text()
        first_lines[name] = _what_ran(run / "results/report/landing.rst")
        assert f"{samples} samples each" in first_lines[name] and f"{samples} samples each" in html
    assert first_lines["a"] != first_lines["b"]
    checkout = _what_ran(tmp / "results/report/landing.rst")
    assert checkout not in first_lines.values()
