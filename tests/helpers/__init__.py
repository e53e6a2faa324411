"""Helpers shared by the tests: the repository root, a copy of the workflow, tiny models,
fabricated results, a throw-away SLURM cluster."""

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def copy_workflow(dest: Path) -> Path:
    """The repository's workflow (Snakefile, config, workflow, envs; no results, venv or git) in
    `dest`, to run or edit without touching the checkout."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ROOT / "Snakefile", dest / "Snakefile")
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", ".snakemake")
    for sub in ("config", "workflow", "envs"):
        shutil.copytree(ROOT / sub, dest / sub, ignore=ignore)
    return dest
