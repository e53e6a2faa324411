"""Fixtures of the workflow tests: a copy of the workflow whose upstream outputs (theory, data,
pi_ref, training, evaluation) are fabricated (tests/helpers/report_fixtures.py) and marked up to
date, after one real run of the report stage (shared by the regeneration and browser tests)."""

from __future__ import annotations

import os
import re

import pytest

from grpo_repro.config import merge
from tests.helpers import ROOT, copy_workflow, job_counts, small_figures, snakemake
from tests.helpers.report_fixtures import make_results

# the rules run for real on the fabricated tables: the report's and the compact fixed-point study's
REPORT_RULES = re.compile(r"^(report_\w+|fixed_point_(compare|resolution|plot))$")


def _snakemake(cwd, *args, timeout=600):
    env = {**os.environ, "PYTHONPATH": str(cwd / "workflow" / "src"), "HF_HUB_OFFLINE": "1"}
    res = snakemake([*args, "--configfile", "config/test.yaml"], cwd, env, timeout)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-4000:]
    return res.log


def _jobs(out: str) -> set:
    return set(job_counts(out)) - {"total"}


@pytest.fixture(scope="session")
def report_workflow(tmp_path_factory):
    """The workflow copy, its report stage run on fabricated upstream outputs."""
    import yaml

    from grpo_repro.train.run_settings import checkpoint_steps

    tmp = tmp_path_factory.mktemp("wf")
    copy_workflow(tmp)
    cfg = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    cfg["variants"] = ["grpo", "dr_grpo"]
    cfg["train"].update(max_steps=4, save_steps=2)
    cfg["report"].update(n_bootstrap=100, n_trajectory_prompts=3)
    cfg["zero"] = None  # the zero-success study samples models: its section is tested in tests/unit
    # small grids: the browser test draws the figures stage too
    cfg["figures"] = merge(cfg["figures"], small_figures())
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


@pytest.fixture(scope="session")
def figures_run(report_workflow):
    """The same copy with its figures stage run for real (the small grids of config/test.yaml)."""
    _snakemake(report_workflow, "figures_all", "-c2", timeout=900)
    return report_workflow
