"""The vLLM server's guard (grpo_repro.train.vllm_server.serve): runs the server's command as a child
in the guard's own process group and ends that whole group when the training job that started the
guard dies, even by SIGKILL, which runs none of the job's `finally` clauses.

`python -m grpo_repro.train.server_guard JOB_PID COMMAND...`: the guard asks Linux for SIGTERM when
its parent dies (prctl PR_SET_PDEATHSIG); on SIGTERM, from that or from serve()'s normal stop, it
gives the server GRACE_S seconds to exit and then SIGKILLs its process group: the server and the
engine processes it started (a SIGKILLed leader alone leaves vLLM's engine core running).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys

GRACE_S = 10.0  # seconds the server may take to exit after SIGTERM
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def main(argv: list[str]) -> int:
    job_pid, command = int(argv[0]), argv[1:]
    with contextlib.suppress(OSError, AttributeError):  # Linux only; elsewhere serve() stops it
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM))
    if os.getppid() != job_pid:  # the job died before the request took effect
        return 1
    server = subprocess.Popen(command)

    def kill_group(*_):
        os.killpg(0, signal.SIGKILL)  # the group: the server's engine processes and this guard

    def end(signum, frame):
        # the handler only asks: the wait below (which holds the child's wait lock, so a second
        # wait here could not reap it) returns when the server exits; an alarm ends a server
        # that outlives GRACE_S
        with contextlib.suppress(ProcessLookupError):
            server.terminate()
        signal.signal(signal.SIGALRM, kill_group)
        signal.alarm(int(GRACE_S))

    signal.signal(signal.SIGTERM, end)
    code = server.wait()
    if signal.getsignal(signal.SIGALRM) is kill_group:  # stopped: end what the server left
        kill_group()
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
