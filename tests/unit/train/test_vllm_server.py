"""The vLLM server of train.vllm_mode server (grpo_repro.train.vllm_server): its command is TRL's,
and its lifecycle (start, wait for /health, log, stop its whole process group also when the body
raises, fail early with the log's tail) against a stand-in server (tests/helpers/
vllm_server_standin.py) started through the same context manager."""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from grpo_repro.train import vllm_server
from grpo_repro.train.vllm_server import GUARD_GRACE_S, ServerError, serve, server_command

STANDIN = Path(__file__).resolve().parents[2] / "helpers" / "vllm_server_standin.py"


def standin(*flags):
    return lambda port: [sys.executable, str(STANDIN), "--port", str(port), *flags]


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (a container's init may not reap orphans)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def gone(pid: int, within_s: float = 10.0) -> bool:
    """The process is gone within `within_s` seconds: SIGKILL is delivered asynchronously, so on
    a loaded machine a killed process may still run for a moment after stop() returns."""
    deadline = time.monotonic() + within_s
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def pids(log: Path, key: str = "pid") -> list[int]:
    """The stand-in's child processes (or with key "server_pid", the stand-in itself)."""
    return [int(x.split("=")[1]) for x in log.read_text().split() if x.startswith(f"{key}=")]


def test_command_is_trls_vllm_serve():
    cmd = server_command("/models/ref", 8123, "bfloat16")
    assert cmd[1:5] == ["-m", "vllm.entrypoints.cli.main", "serve", "/models/ref"]
    flags = dict(zip(cmd[5::2], cmd[6::2], strict=False))
    assert flags["--port"] == "8123" and flags["--host"] == "127.0.0.1"
    assert flags["--dtype"] == "bfloat16" and flags["--gpu-memory-utilization"] == "0.9"
    i = cmd.index("--weight-transfer-config")  # TRL's weight sync (VLLMClient.init_communicator)
    assert json.loads(cmd[i + 1]) == {"backend": "nccl"}
    assert cmd[cmd.index("--logprobs-mode") + 1] == "processed_logprobs"


def test_waits_for_health_logs_and_stops(tmp_path):
    log = tmp_path / "vllm_server.log"
    with serve(
        "ref", "7", log, "float32", command=standin("--delay", "1.5", "--child"), poll_s=0.1
    ) as url:
        with urllib.request.urlopen(f"{url}/health", timeout=5) as resp:
            assert resp.status == 200  # serve() returned only once the server answers
        text = log.read_text()
        assert "standin CUDA_VISIBLE_DEVICES=7" in text  # the server's one device
        assert "standin VLLM_SERVER_DEV_MODE=1" in text  # TRL's endpoints need vLLM's dev mode
        (child,) = pids(log)
        assert alive(child)
    assert gone(child)  # the server's whole process group is gone after the block
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{url}/health", timeout=2)


def test_a_stop_ends_the_group_at_once(tmp_path):
    """A server that exits on SIGTERM is not waited for: serve()'s stop returns in well under the
    guard's grace period, its workers gone."""
    log = tmp_path / "vllm_server.log"
    server = serve("ref", "0", log, "float32", command=standin("--child"), poll_s=0.1)
    with server:
        procs = pids(log) + pids(log, "server_pid")
        t0 = time.monotonic()
    assert time.monotonic() - t0 < GUARD_GRACE_S / 4
    assert len(procs) == 2 and all(gone(p) for p in procs)


@pytest.mark.slow  # waits out the guard's grace period (10 s)
def test_a_server_that_ignores_sigterm_is_killed_after_the_grace(tmp_path):
    log = tmp_path / "vllm_server.log"
    server = serve("ref", "0", log, "float32", command=standin("--ignore-term"), poll_s=0.1)
    with server:
        (pid,) = pids(log, "server_pid")
        t0 = time.monotonic()
    assert GUARD_GRACE_S - 1 <= time.monotonic() - t0 < GUARD_GRACE_S + 10
    assert gone(pid)


def test_a_job_killed_by_sigkill_takes_its_server_with_it(tmp_path):
    """The training job dies by SIGKILL (no finally clause runs): the guard ends the server and
    its workers (PR_SET_PDEATHSIG)."""
    log = tmp_path / "vllm_server.log"
    job = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\n"
            "from grpo_repro.train.vllm_server import serve\n"
            f"cmd = lambda port: [{sys.executable!r}, {str(STANDIN)!r}, '--port', str(port), "
            "'--child']\n"
            f"with serve('ref', '0', {str(log)!r}, 'float32', command=cmd, poll_s=0.1):\n"
            "    print('up', flush=True)\n"
            "    time.sleep(600)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(vllm_server.__file__).parents[2])},
    )
    try:
        lines = iter(job.stdout.readline, "")
        assert "up" in (line.strip() for line in lines)  # after serve()'s own lines
        procs = pids(log) + pids(log, "server_pid")
        assert len(procs) == 2 and all(alive(p) for p in procs)
        job.send_signal(signal.SIGKILL)
        job.wait()
        assert all(gone(p) for p in procs)
    finally:
        job.kill()


def test_stopped_when_the_body_raises(tmp_path):
    log = tmp_path / "vllm_server.log"
    server = serve("ref", "0", log, "float32", command=standin("--child"), poll_s=0.1)
    with pytest.raises(KeyboardInterrupt), server:
        (child,) = pids(log)
        raise KeyboardInterrupt
    assert gone(child)


def test_a_server_that_dies_raises_with_its_log(tmp_path):
    log = tmp_path / "vllm_server.log"
    server = serve("ref", "0", log, "float32", command=standin("--die"), poll_s=0.1)
    with pytest.raises(ServerError) as err, server:
        pytest.fail("the body must not run without a server")
    msg = str(err.value)
    assert "exited with status 3" in msg and "CUDA out of memory (stand-in failure)" in msg
    assert str(log) in msg


def test_a_server_that_never_answers_times_out_and_is_stopped(tmp_path):
    log = tmp_path / "vllm_server.log"
    server = serve(
        "ref",
        "0",
        log,
        "float32",
        command=standin("--delay", "60", "--child"),
        startup_timeout_s=1.0,
        poll_s=0.1,
        grace_s=5.0,
    )
    with pytest.raises(ServerError, match=r"did not answer .*/health within 1 s") as err, server:
        pass
    assert "standin CUDA_VISIBLE_DEVICES=0" in str(err.value)  # the log's tail
    assert all(gone(p) for p in pids(log))


def test_sigterm_handler_is_restored(tmp_path):
    import signal

    before = signal.getsignal(signal.SIGTERM)
    with serve("ref", "0", tmp_path / "log", "float32", command=standin(), poll_s=0.1):
        assert signal.getsignal(signal.SIGTERM) is vllm_server._raise_on_sigterm
    assert signal.getsignal(signal.SIGTERM) is before
