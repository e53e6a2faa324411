"""The workflow's scripts are spawn-safe: a child process started with the `spawn` method (vLLM's
engine, once CUDA is initialised) re-imports the parent's __main__, i.e. re-runs a Snakemake
`script:` file; the job's body must not run again in it.

1. Every script of workflow/scripts/ holds its body in `main(sm)`, called only under
   `if __name__ == "__main__": main(snakemake)`; at module level: docstring, imports,
   definitions.
2. Under Snakemake (its preamble defines `snakemake` at module level, the file runs as __main__),
   a guarded job that spawns a child runs its body once and the child does its work; the same
   body unguarded breaks the child.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from tests.helpers import ROOT, snakemake

SCRIPTS = sorted((ROOT / "workflow" / "scripts").glob("*.py"))
GUARD = "if __name__ == '__main__':\n    main(snakemake)"  # as ast.unparse writes it


@pytest.mark.parametrize("script", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_script_body_runs_only_as_main(script):
    tree = ast.parse(script.read_text())
    *body, last = tree.body
    assert ast.unparse(last) == GUARD, f"{script.name} must end with {GUARD!r}"
    mains = [n for n in body if isinstance(n, ast.FunctionDef) and n.name == "main"]
    assert len(mains) == 1 and [a.arg for a in mains[0].args.args] == ["sm"], script.name
    for node in body:
        docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        allowed = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)
        assert docstring or isinstance(node, allowed), (
            f"{script.name}:{node.lineno} runs at import: {ast.unparse(node)[:80]}"
        )


SPAWNING_SCRIPT = """
import multiprocessing
import sys


def child(path: str) -> None:
    with open(path, "a") as fh:
        fh.write("child\\n")


def main(sm) -> None:
    path = sm.output[0] + ".runs"
    with open(path, "a") as fh:
        fh.write("body\\n")
    proc = multiprocessing.get_context("spawn").Process(target=child, args=(path,))
    proc.start()
    proc.join()
    with open(path, "a") as fh:
        fh.write(f"child exit {proc.exitcode}\\n")
    open(sm.output[0], "w").close()


"""

SNAKEFILE = """
rule job:
    output:
        "done.txt",
    script:
        "job.py"
"""


def _spawning_job(tmp_path: Path, call: str) -> list[str]:
    (tmp_path / "job.py").write_text(SPAWNING_SCRIPT + call + "\n")
    (tmp_path / "Snakefile").write_text(SNAKEFILE)
    res = snakemake(["-c1"], tmp_path, dict(os.environ), timeout=300)
    assert res.returncode == 0, res.log
    return (tmp_path / "done.txt.runs").read_text().splitlines()


def test_spawned_child_does_not_rerun_the_job(tmp_path):
    assert _spawning_job(tmp_path, GUARD) == ["body", "child", "child exit 0"]


def test_unguarded_job_breaks_its_spawned_child(tmp_path):
    """Without the guard the child re-runs the file's body: Snakemake's preamble points __file__
    at the script itself, so the child reads it without the preamble and fails on `snakemake`
    (NameError) before its own work; were `snakemake` defined, the body would run a second job."""
    lines = _spawning_job(tmp_path, "main(snakemake)")
    assert lines[0] == "body" and "child" not in lines and lines[-1] == "child exit 1", lines
