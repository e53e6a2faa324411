"""The rule graph: dry runs of the default and paper configurations build the whole DAG."""

import re
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]


def dry_run(*args):
    res = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--forceall", *args], cwd=ROOT,
                         capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


def job_counts(out: str) -> dict:
    table = out.split("Job stats:")[1]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^(\w+)\s+(\d+)$", table, re.M)}


def test_default_graph():
    counts = job_counts(dry_run())
    assert counts["theory_derivations"] == 1
    assert counts.get("train_grpo") == 4  # one job per variant


def test_paper_graph(monkeypatch):
    counts = job_counts(dry_run("--configfile", "config/paper.yaml"))
    assert counts.get("train_grpo") == 4
    assert "train_reference" not in counts  # pi_ref is the hub model
