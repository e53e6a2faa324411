"""Helpers shared by the tests: the repository root, a copy of the workflow, tiny models,
fabricated results, a throw-away SLURM cluster."""

import copy
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# the full GSM8K splits ({train,test}.jsonl) for the optional extras of the loader and answer-checker
# tests: a folder named by GSM8K_DIR, else none (those tests skip; the shipped excerpt covers both)
GSM8K_DIR = Path(os.environ["GSM8K_DIR"]) if os.environ.get("GSM8K_DIR") else None


def full_gsm8k_split(split: str, covered: str) -> Path:
    """The full GSM8K split's JSONL in GSM8K_DIR; the calling test skips, saying so, where it is
    absent (`covered`: what the shipped excerpt's tests cover instead)."""
    path = GSM8K_DIR / f"{split}.jsonl" if GSM8K_DIR else None
    if path is None or not path.exists():
        pytest.skip(
            f"optional extra: the full GSM8K split {split}.jsonl is not in GSM8K_DIR ({path}); "
            f"the excerpt tests cover {covered}"
        )
    return path


def copy_workflow(dest: Path) -> Path:
    """The repository's workflow (Snakefile, config, workflow, envs, the default profile; no
    results, venv or git) in `dest`, to run or edit without touching the checkout."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ROOT / "Snakefile", dest / "Snakefile")
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", ".snakemake")
    for sub in ("config", "workflow", "envs", "profiles"):
        shutil.copytree(ROOT / sub, dest / sub, ignore=ignore)
    return dest


def small_figures() -> dict:
    """The figures section's small grids of the fault-tolerance check's shrunk configuration
    (workflow/checks/fault_tolerance.SMALL): every figure rule, fewer points."""
    path = ROOT / "workflow" / "checks" / "fault_tolerance.py"
    spec = importlib.util.spec_from_file_location("fault_tolerance", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return copy.deepcopy(module.SMALL["figures"])


def snakemake(
    args: list[str], cwd: Path, env: dict | None = None, timeout: int = 600
) -> subprocess.CompletedProcess:
    """`python -m snakemake *args` in `cwd` (no stdin, output captured); `.log` = stdout + stderr."""
    res = subprocess.run(
        [sys.executable, "-m", "snakemake", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
    )
    res.log = res.stdout + res.stderr  # type: ignore[attr-defined]
    return res


def job_counts(log: str) -> dict[str, int]:
    """{rule: jobs} of the first "Job stats" table a run or dry run prints, up to and with its
    "total" row (empty when nothing is scheduled)."""
    counts: dict[str, int] = {}
    for line in log.partition("Job stats:")[2].splitlines():
        m = re.match(r"^(\w+)\s+(\d+)$", line)
        if m:
            counts[m.group(1)] = int(m.group(2))
            if m.group(1) == "total":
                break
    return counts
