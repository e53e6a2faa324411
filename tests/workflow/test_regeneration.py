"""Regeneration (stage report): on a copy of the workflow whose upstream outputs are fabricated, editing a
plot script or the plotting code reruns plot rules only, editing a compute script reruns the report
stage and never training or evaluation, and the HTML report builds."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT, copy_workflow
from tests.helpers.report_fixtures import make_results

# ---------------------------------------------------------------------------------------------
# regeneration: editing a plot reruns the plot rules only (dry run on a copy of the workflow)
# ---------------------------------------------------------------------------------------------
REPORT_RULES = re.compile(r"^report_\w+$")


def _snakemake(cwd, *args, timeout=600):
    env = {**os.environ, "PYTHONPATH": str(cwd / "workflow" / "src"), "HF_HUB_OFFLINE": "1"}
    res = subprocess.run(
        [sys.executable, "-m", "snakemake", *args, "--configfile", "config/test.yaml"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
    )
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
    import yaml

    from grpo_repro.train.schedule import checkpoint_steps

    tmp = tmp_path_factory.mktemp("wf")
    copy_workflow(tmp)
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    cfg["variants"] = ["grpo", "dr_grpo"]
    cfg["train"].update(max_steps=4, save_steps=2)
    cfg["report"].update(n_bootstrap=100, n_trajectory_prompts=3)
    (tmp / "config/test.yaml").write_text(yaml.safe_dump(cfg))
    make_results(tmp, cfg, checkpoint_steps(cfg["train"], 64), n_prompts={"test": 12, "train": 8})

    # every other upstream output: an empty file (or folder), then `--touch` in DAG order
    out = _snakemake(tmp, "report_all", "-n", "--summary")
    upstream = []
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) < 6 or f[0] == "output_file" or REPORT_RULES.match(f[2]):
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
    pending = _jobs(_snakemake(tmp, "report_all", "-n", "--rerun-triggers", "mtime", "code"))
    assert pending and all(REPORT_RULES.match(r) or r == "report_all" for r in pending), pending
    ran = _snakemake(tmp, "report_all", "-c2", "--rerun-triggers", "mtime")
    assert "Finished" in ran or "steps (100%) done" in ran
    return tmp


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
    "report_plot_trajectories",
    "report_plot_amplification_mean",
    "report_plot_amplification",
    "report_plot_overlay",
    "report_plot_summary_table",
}


def test_plot_script_edit_reruns_only_plots(workflow_copy):
    assert _pending(workflow_copy) == set()
    with _edited(workflow_copy / "workflow/scripts/report_plot.py"):
        jobs = _pending(workflow_copy)
    assert jobs == PLOT_RULES
    assert _pending(workflow_copy) == set()


def test_restyle_reruns_every_plot_and_no_compute(workflow_copy):
    with _edited(workflow_copy / "workflow/src/grpo_repro/report/plots.py"):
        jobs = _pending(workflow_copy)
    assert jobs == PLOT_RULES - {"report_plot_summary_table"}
    with _edited(workflow_copy / "workflow/src/grpo_repro/style.py"):
        jobs = _pending(workflow_copy)
    assert jobs and all(r.startswith("report_plot_") for r in jobs), jobs


def test_compute_edit_never_reruns_training(workflow_copy):
    with _edited(workflow_copy / "workflow/scripts/report_amplification.py"):
        jobs = _pending(workflow_copy)
    assert {"report_amplification", "report_summary", "report_plot_amplification"} <= jobs
    assert all(REPORT_RULES.match(r) for r in jobs), jobs
    assert not jobs & {"train_grpo", "evaluate_checkpoint", "train_reference", "data_prepare"}


def test_report_builds(workflow_copy):
    tmp = workflow_copy
    _snakemake(tmp, "report_all", "--report", "results/report.html")
    html = (tmp / "results/report.html").read_text()
    assert "Figure 3" in html and "not exact iterations" in html
    assert "Reproduction of Mroueh" in html  # the workflow description (Snakefile `report:`)
    assert "summary_table.html" in html
    assert "System Message" not in html  # every caption is valid reStructuredText
    summary_json = json.loads((tmp / "results/summary.json").read_text())
    assert summary_json["config"]["variants"] == ["grpo", "dr_grpo"]
    for split in ("test", "train"):
        for stem in ("trajectories", "amplification_scatter", "amplification_hist", "overlay"):
            assert (tmp / f"results/report/{stem}_{split}.png").stat().st_size > 0
            assert (tmp / f"results/report/{stem}_{split}.pdf").stat().st_size > 0
