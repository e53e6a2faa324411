"""The job log (grpo_repro.io.log_to): a re-executed or resumed job appends to its rule's log and
never truncates what its earlier attempts wrote."""

import subprocess
import sys

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
"""


def _job(tmp_path, outcome):
    path = tmp_path / "tmpab12cd.evaluate_run.py"  # as Snakemake names its copy of a script
    path.write_text(JOB)
    log = tmp_path / "job.log"
    proc = subprocess.run([sys.executable, str(path), str(log), outcome], cwd=ROOT)
    return proc.returncode, log.read_text()


def test_a_finished_job_s_log_ends_with_its_times(tmp_path):
    """The interpreter's normal exit runs the exit handlers and flushes the log; the [job times]
    line (bench_graph.py reads it) comes last."""
    code, log = _job(tmp_path, "ok")
    assert code == 0
    assert "written" in log and "buffered tail" in log and "exit handler ran" in log
    assert io.JOB_TIMES in log.splitlines()[-1]


def test_a_failed_job_exits_non_zero_with_its_traceback_and_times(tmp_path):
    code, log = _job(tmp_path, "fail")
    assert code == 1 and "RuntimeError: the job failed" in log and io.JOB_TIMES in log
