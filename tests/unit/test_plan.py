"""The plan (grpo_repro.plan): what the paper's run will do, counted by the code that schedules it,
equals a count from the paper's numbers by hand; its costs say which rates are assumptions."""

import json
import subprocess
import sys

import pytest

from grpo_repro import config as cfg
from grpo_repro import plan
from tests.helpers import ROOT

PAPER = ROOT / "config" / "paper.yaml"
STUDIES = ROOT / "config" / "paper_studies.yaml"
GSM8K = {"train": 7473, "test": 1319}  # openai/gsm8k's published split sizes


def by_name(stages):
    return {s.name: s for s in stages}


def hand_count(variants: int):
    """The paper's run counted from its numbers (Sec. 6, App. A; config/paper.yaml)."""
    batches = 7473 // 28  # one epoch of 28 prompts per step, the partial batch dropped: 266
    steps = batches * 10  # mu = 10 gradient steps per batch: 2660
    checkpoints = len(range(150, steps + 1, 150)) + (steps % 150 != 0)  # every 150 and the last
    pool, test, samples = 128, 1319, 50
    finals = 2 * test * samples + test  # test at T 1.0 and 0.5 (50 samples), greedy (one)
    run_eval = checkpoints * (test + pool) * samples + finals
    ref_eval = (test + pool) * samples + finals
    return {
        "steps": steps * variants,
        "checkpoints": checkpoints * variants,
        "train_completions": batches * 28 * 16 * variants,
        "eval_completions": ref_eval + variants * run_eval,
    }


@pytest.mark.parametrize("files, variants", [([PAPER], 1), ([PAPER, STUDIES], 4)])
def test_the_plans_counts_equal_a_count_by_hand(files, variants):
    config = cfg.load(*files)
    throughput = json.loads(plan.THROUGHPUT.read_text())
    stages = by_name(plan.plan(config, throughput, GSM8K))
    want = hand_count(variants)
    assert hand_count(1)["steps"] == 2660 and hand_count(1)["checkpoints"] == 18
    assert (stages["train"].steps, stages["train"].checkpoints) == (
        want["steps"],
        want["checkpoints"],
    )
    assert stages["train"].completions == want["train_completions"]
    assert stages["train"].tokens == want["train_completions"] * 200
    assert stages["evaluate"].completions == want["eval_completions"]
    assert stages["evaluate"].tokens == want["eval_completions"] * 200
    # checkpoints of 494M float32 parameters plus one TRL state (~4 x the weights)
    disk = variants * (18 + 4) * throughput["parameters"] * 4 / 1e9
    assert stages["train"].disk_gb == pytest.approx(disk)
    # the rates are assumptions until a GPU measures them: every cost says so
    assert all(s.assumed for s in stages.values())
    assert ("fixed_point train" in stages) == (variants == 4)  # the compact study: the overlay's


def test_the_training_cost_scales_with_the_rate_and_the_gpus():
    config = cfg.load(PAPER)
    rate = json.loads(plan.THROUGHPUT.read_text())
    base = by_name(plan.plan(config, rate, GSM8K))["train"].gpu_hours
    assert base == pytest.approx(2660 * rate["train"]["seconds_per_step"] * 8 / 3600)
    rate["train"]["seconds_per_step"] *= 2
    assert by_name(plan.plan(config, rate, GSM8K))["train"].gpu_hours == pytest.approx(2 * base)


def test_the_command_prints_the_cost_table():
    out = subprocess.run(
        [sys.executable, "-m", "grpo_repro.plan", "--configfile", str(PAPER)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "| train | 1 | 2660 | 18 | 119,168 |" in out.stdout
    assert "GPU-hours" in out.stdout and "ASSUMPTION" in out.stdout
