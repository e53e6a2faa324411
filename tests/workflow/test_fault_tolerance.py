"""Slow check (pytest -m slow): kill -9 during training and evaluation, rerun, and compare every
evaluation table and figure data file with an uninterrupted cold run, byte for byte."""

import subprocess
import sys

import pytest

from tests.helpers import ROOT


@pytest.mark.slow
def test_kill_resume_and_determinism(tmp_path):
    res = subprocess.run(
        [sys.executable, str(ROOT / "workflow/checks/fault_tolerance.py"), "--keep", str(tmp_path)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=3600,
    )
    print(res.stdout)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "0 different" in res.stdout and "killed -9 during training" in res.stdout
    assert "killed -9 during evaluation" in res.stdout
