"""The first GPU's check, workflow/benchmarks/gpu_paper_scale.py, run on a CPU at a tiny shape (slow
tier): it measures a training step and evaluation sampling through the pipeline's own code and
writes the throughput table that the plan (grpo_repro.plan) reads."""

import json
import subprocess
import sys

import pytest

from tests.helpers import ROOT


@pytest.mark.slow
def test_it_writes_the_throughput_table_the_plan_reads(tmp_path):
    script = ROOT / "workflow" / "benchmarks" / "gpu_paper_scale.py"
    tiny = ["--shape", "32", "1", "2", "1", "64", "4096", "--steps", "2", "--eval-prompts", "2"]
    out = subprocess.run(
        [sys.executable, str(script), str(tmp_path), *tiny],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    table = json.loads((tmp_path / "throughput.json").read_text())
    assert table["train"]["measured"] and table["train"]["seconds_per_step"] > 0
    assert table["train"]["completion_tokens_per_step"] == 4 * 16 * 200  # one device's share
    assert table["eval"]["measured"] and table["eval"]["tokens_per_s"] > 0
    plan = subprocess.run(
        [
            sys.executable,
            "-m",
            "grpo_repro.plan",
            "--configfile",
            str(ROOT / "config" / "paper.yaml"),
        ]
        + ["--throughput", str(tmp_path / "throughput.json")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert plan.returncode == 0, plan.stderr
    assert "measured on CPU" in plan.stdout and "(assumed rate)" not in plan.stdout
