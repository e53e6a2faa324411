"""The job log (grpo_repro.io.log_to): a re-executed or resumed job appends to its rule's log and
never truncates what its earlier attempts wrote."""

import subprocess
import sys

from tests.helpers import ROOT


def test_a_second_attempt_appends_to_the_log(tmp_path):
    log = tmp_path / "logs" / "job.log"
    job = "from grpo_repro import io; import sys; io.log_to(sys.argv[1]); print(sys.argv[2])"
    for attempt in ("first attempt", "second attempt"):
        subprocess.run([sys.executable, "-c", job, str(log), attempt], check=True, cwd=ROOT)
    lines = log.read_text().splitlines()
    assert lines[0] == "first attempt" and "second attempt" in lines
    assert lines.index("second attempt") > lines.index("first attempt")
