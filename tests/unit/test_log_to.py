"""The job log (grpo_repro.io.log_to): a re-executed or resumed job appends to its rule's log and
never truncates what its earlier attempts wrote."""

import subprocess
import sys

import pytest

from grpo_repro import io
from tests.helpers import ROOT


def test_a_second_attempt_appends_to_the_log(tmp_path):
    log = tmp_path / "logs" / "job.log"
    job = "from grpo_repro import io; import sys; io.log_to(sys.argv[1]); print(sys.argv[2])"
    for attempt in ("first attempt", "second attempt"):
        subprocess.run([sys.executable, "-c", job, str(log), attempt], check=True, cwd=ROOT)
    lines = log.read_text().splitlines()
    assert lines[0] == "first attempt" and "second attempt" in lines
    assert lines.index("second attempt") > lines.index("first attempt")


JOB = """
import atexit, sys
from grpo_repro import io
io.log_to(sys.argv[1])
atexit.register(print, "exit handler ran")
print("written")
sys.stdout.write("buffered tail")  # no newline: only a flush writes it
if sys.argv[2] == "fail":
    raise RuntimeError("the job failed")
io.end_job(sys.argv[3])
print("not reached when the process is the job's")
"""


def _job(tmp_path, outcome, script):
    path = tmp_path / "tmpab12cd.evaluate_run.py"  # as Snakemake names its copy of a script
    path.write_text(JOB)
    log = tmp_path / "job.log"
    proc = subprocess.run(
        [sys.executable, str(path), str(log), outcome, script], cwd=ROOT, capture_output=True
    )
    return proc.returncode, log.read_text()


def test_end_job_runs_the_exit_handlers_flushes_and_exits_zero(tmp_path):
    code, log = _job(tmp_path, "ok", "workflow/scripts/evaluate_run.py")
    assert code == 0 and "not reached" not in log
    assert "written" in log and "buffered tail" in log and "exit handler ran" in log
    assert io.JOB_TIMES in log.splitlines()[-1]


def test_end_job_returns_in_a_process_started_for_another_script(tmp_path):
    code, log = _job(tmp_path, "ok", "workflow/scripts/train_grpo.py")
    assert code == 0 and "not reached" in log and "exit handler ran" in log


def test_a_failed_job_still_exits_non_zero(tmp_path):
    code, log = _job(tmp_path, "fail", "workflow/scripts/evaluate_run.py")
    assert code == 1 and "RuntimeError: the job failed" in log and io.JOB_TIMES in log


RUNPY = """
import runpy, sys
script = sys.argv.pop(1)  # the job then reads its own arguments, as when run directly
runpy.run_path(script, run_name="__main__")
print("the calling process went on")
"""


def test_end_job_returns_in_a_process_that_runs_the_script_with_runpy(tmp_path):
    """runpy (as the tests run the rules' scripts) sets sys.argv[0] to the script: end_job must
    still return, or it would end the calling process (pytest) with status 0."""
    path = tmp_path / "tmpab12cd.evaluate_run.py"
    path.write_text(JOB)
    log = tmp_path / "job.log"
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            RUNPY,
            str(path),
            str(log),
            "ok",
            "workflow/scripts/evaluate_run.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and "not reached" in log.read_text()
    assert "the calling process went on" in log.read_text() + proc.stdout


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["python", ".snakemake/scripts/tmpab12.evaluate_run.py"], True),
        (["python", "-u", "-X", "importtime", "workflow/scripts/evaluate_run.py"], True),
        (["python", "workflow/scripts/train_grpo.py"], False),
        (["python", "-m", "pytest", "tests/unit"], False),
        (["python", "-c", "import x", "evaluate_run.py"], False),
        (["python"], False),
    ],
)
def test_started_for_reads_the_interpreters_command_line(argv, expected):
    assert io.started_for("workflow/scripts/evaluate_run.py", argv) is expected
