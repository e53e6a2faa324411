"""The device check, workflow/benchmarks/device_check.sh, run to its end on a CPU at a tiny shape
(slow tier; no GPU asserted): the paper's training process and the zero-success control at their
real micro-batch (16 completions; the control's 28 micro-steps) through the pipeline's own code, the
throughput table the plan (grpo_repro.plan) reads, the memory model beside each; then the carried
wheels (envs/device_wheels.txt), fetched from PyPI for the GPU machine's Python, install into an
empty folder with --no-index and hold, with the machine's image, every requirement and every
distribution the check imported (workflow/benchmarks/device_wheels.py)."""

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT

BENCH = ROOT / "workflow" / "benchmarks"


@pytest.mark.slow
def test_the_device_check_runs_and_its_wheels_are_complete(tmp_path):
    out = tmp_path / "out"
    tiny = ["--shape", "32", "1", "2", "1", "64", "4096", "--steps", "2", "--control-steps", "1"]
    tiny += ["--completion-tokens", "16"]  # the jobs' micro-batches, short completions
    env = {**os.environ, "PYTHON": sys.executable, "WHEELS": str(tmp_path / "none")}
    res = subprocess.run(
        ["bash", str(BENCH / "device_check.sh"), str(out), *tiny, "--eval-prompts", "2"],
        capture_output=True, text=True, timeout=1200, env=env,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    result = json.loads((out / "gpu_paper_scale.json").read_text())
    for phase, accum in (("train", 4), ("zero_control", 28)):  # the jobs' real layouts
        got = result[phase]
        assert got["per_device_batch"] == 16 and got["grad_accum"] == accum, (phase, got)
        assert got["seconds_per_step"] > 0 and got["memory_model_gb"] > 0
    assert result["logits"]["temperature"] == 0.1
    table = json.loads((out / "throughput.json").read_text())
    assert (
        table["train"]["measured"] and table["train"]["completion_tokens_per_step"] == 4 * 16 * 16
    )
    assert table["eval"]["measured"] and table["eval"]["tokens_per_s"] > 0
    plan = subprocess.run(
        [sys.executable, "-m", "grpo_repro.plan", "--configfile", str(ROOT / "config" / "paper.yaml"),
         "--throughput", str(out / "throughput.json")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert plan.returncode == 0, plan.stderr
    assert "measured on CPU" in plan.stdout and "(assumed rate)" not in plan.stdout
    wheels = tmp_path / "whl"
    tool = [sys.executable, str(BENCH / "device_wheels.py")]
    got = subprocess.run([*tool, "download", str(wheels)], capture_output=True, text=True)
    assert got.returncode == 0, got.stderr[-2000:]
    imported = ["--imported", str(out / "gpu_paper_scale.json")]
    got = subprocess.run([*tool, "check", str(wheels), *imported], capture_output=True, text=True)
    assert got.returncode == 0, got.stdout + got.stderr
    assert {"trl", "torch", "transformers"} <= set(result["distributions"])
