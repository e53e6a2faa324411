"""grpo_repro.codedeps: the import closure of a script within the package (every import statement,
relative ones and those inside functions; parent packages' __init__ modules included)."""

import os
from pathlib import Path

from grpo_repro.codedeps import closure


def _tree(tmp_path, files: dict):
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_closure_follows_every_kind_of_import(tmp_path):
    src = tmp_path / "src"
    _tree(
        src,
        {
            "grpo_repro/__init__.py": "",
            "grpo_repro/a/__init__.py": "",
            "grpo_repro/a/x.py": "from .y import f\n",
            "grpo_repro/a/y.py": "def f():\n    from grpo_repro.b import z\n"
            "class C:\n    def g(self):\n        with open(0):\n            try:\n                pass\n"
            "            except OSError:\n                import grpo_repro.c\n",
            "grpo_repro/c.py": "match 1:\n    case 1:\n        if True:\n            pass\n"
            "        else:\n            from grpo_repro import d\n",
            "grpo_repro/d.py": "",
            "grpo_repro/b/__init__.py": "from . import w\n",
            "grpo_repro/b/z.py": "import numpy\n",
            "grpo_repro/b/w.py": "",
            "grpo_repro/unused.py": "",
        },
    )
    _tree(tmp_path, {"script.py": "from grpo_repro.a import x\nimport os\n"})
    got = {p.split("src/")[1] for p in closure([tmp_path / "script.py"], src)}
    assert got == {
        "grpo_repro/__init__.py",
        "grpo_repro/a/__init__.py",
        "grpo_repro/a/x.py",
        "grpo_repro/a/y.py",
        "grpo_repro/b/__init__.py",
        "grpo_repro/b/z.py",
        "grpo_repro/b/w.py",
        "grpo_repro/c.py",
        "grpo_repro/d.py",
    }


def test_a_file_edited_in_the_same_process_is_read_again(tmp_path):
    """The parsed imports are kept per file version (closure runs once per rule in a Snakefile):
    an edit, even to a text of the same length, is seen by the next call."""
    src = tmp_path / "src"
    _tree(src, {"grpo_repro/__init__.py": "", "grpo_repro/m.py": "", "grpo_repro/n.py": ""})
    script = tmp_path / "script.py"
    script.write_text("from grpo_repro import m\n")
    first = {p.split("src/")[1] for p in closure([script], src)}
    script.write_text("from grpo_repro import n\n")
    os.utime(script, ns=(1, 1))  # a different mtime even on a coarse clock
    second = {p.split("src/")[1] for p in closure([script], src)}
    assert first == {"grpo_repro/__init__.py", "grpo_repro/m.py"}
    assert second == {"grpo_repro/__init__.py", "grpo_repro/n.py"}


def test_closure_of_a_module_name(tmp_path):
    src = tmp_path / "src"
    _tree(
        src,
        {
            "grpo_repro/__init__.py": "",
            "grpo_repro/m.py": "from grpo_repro import n\n",
            "grpo_repro/n.py": "",
        },
    )
    got = {p.split("src/")[1] for p in closure(["grpo_repro.m"], src)}
    assert got == {"grpo_repro/__init__.py", "grpo_repro/m.py", "grpo_repro/n.py"}


def test_package_imports_go_one_way():
    """models (loading and saving policies) imports nothing of data (the prompt sets and the
    organism's tokenizers), which reads models: no cycle behind lazy imports."""
    src = Path(__file__).resolve().parents[2] / "workflow" / "src"
    models = closure(["grpo_repro.models"], src)
    assert models and not [f for f in models if "/data/" in f], models


def test_no_job_reads_the_configuration_code():
    """The configuration's loading and checks (and the run's start check of the hub cache) run when
    the workflow loads, never in a job: no script's code closure holds them, so editing a check
    reruns nothing (jobs get their settings as params)."""
    root = Path(__file__).resolve().parents[2]
    src = root / "workflow" / "src"
    config_code = {"config.py", "config_checks.py", "prefetch.py"}
    for script in sorted((root / "workflow" / "scripts").glob("*.py")):
        files = {os.path.relpath(f, src / "grpo_repro") for f in closure([script], src)}
        assert not files & config_code, (script.name, sorted(files & config_code))
