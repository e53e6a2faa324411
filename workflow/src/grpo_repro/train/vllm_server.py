"""The vLLM generation server of a GRPO run in the paper's layout (config key train.vllm_mode:
server): one GPU serves vLLM generation to the train.devices training processes (the paper: GPU 0
serves, 7 GPUs train).

`serve()` starts the server inside the training job on the job's last GPU, with the command TRL
itself builds (trl.scripts.vllm_serve.build_command: `vllm serve` plus TRL's weight-transfer and
logprob flags, environment VLLM_SERVER_DEV_MODE=1, as `trl vllm-serve` runs it), writes its output
to a log file, waits until its /health endpoint answers, yields its base URL (GRPOConfig's
vllm_server_base_url) and stops it (its whole process group) when the body ends, also on an
error, KeyboardInterrupt or SIGTERM; a SIGKILL of the job ends it through its guard
(Linux's parent-death signal, below). The server's GPU is never one of the training processes':
TRL's weight sync (VLLMClient.init_communicator) joins the trainer's main process and the server's
worker in one NCCL group, which needs two distinct devices.

The guard (`main`, `python -m grpo_repro.train.vllm_server JOB_PID COMMAND...`) runs the server's
command as a child in its own process group and ends that whole group when the training job that
started it dies, even by SIGKILL, which runs none of the job's `finally` clauses: it asks Linux for
SIGTERM when its parent dies (prctl PR_SET_PDEATHSIG); on SIGTERM, from that or from serve()'s
normal stop, it gives the server GUARD_GRACE_S seconds to exit and then SIGKILLs its process group: the
server and the engine processes it started (a SIGKILLed leader alone leaves vLLM's engine core
running).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

HOST = "127.0.0.1"  # the server answers the training job on this host only
#: the share of its GPU the server takes for weights, activations and KV cache: TRL's default
#: (trl.scripts.vllm_serve.ScriptArguments); the GPU serves nothing else
GPU_MEMORY_UTILIZATION = 0.9
STARTUP_TIMEOUT_S = 900.0  # loading the model and capturing CUDA graphs: minutes at most
GRACE_S = 30.0  # after SIGTERM, how long the server may take to exit before SIGKILL
LOG_TAIL = 40  # lines of the server's log quoted when it fails


class ServerError(RuntimeError):
    """The vLLM server exited or did not answer in time; the message quotes its log."""


def server_command(
    model: str,
    port: int,
    dtype: str,
    max_model_len: int | None = None,
    gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION,
) -> list[str]:
    """The `vllm serve` command line of TRL's server mode (trl.scripts.vllm_serve.build_command).
    max_model_len None: vLLM's default, the model's context length (TRL needs no bound)."""
    from trl.scripts.vllm_serve import ScriptArguments, build_command

    return build_command(
        ScriptArguments(
            model=str(model),
            host=HOST,
            port=int(port),
            dtype=dtype,
            max_model_len=max_model_len,
            gpu_memory_utilization=gpu_memory_utilization,
        )
    )


def log_tail(path: str | Path, lines: int = LOG_TAIL) -> str:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=5) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def stop(proc: subprocess.Popen, grace_s: float = GRACE_S) -> None:
    """End the server's process group (it leads its own session): SIGTERM, up to `grace_s`
    seconds for the leader to exit, then SIGKILL to whatever is left of the group."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    with contextlib.suppress(ProcessLookupError):  # the leader's workers, or the leader itself
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _raise_on_sigterm(signum, frame):
    raise SystemExit(128 + signum)  # run the finally clauses: the server is stopped


@contextlib.contextmanager
def serve(
    model: str | Path,
    gpu: str,
    log_path: str | Path,
    dtype: str,
    command: Callable[[int], list[str]] | None = None,
    startup_timeout_s: float = STARTUP_TIMEOUT_S,
    poll_s: float = 1.0,
    grace_s: float = GRACE_S,
) -> Iterator[str]:
    """Run the vLLM server of `model` on device `gpu` (CUDA_VISIBLE_DEVICES of the server) for the
    body and yield its base URL; its stdout and stderr go to `log_path`. It listens on a free port
    (grpo_repro.gpus.free_port). command(port): the server's command line (default server_command;
    tests pass a stand-in). Raises ServerError, quoting the log's tail, when the server exits or
    does not answer /health within `startup_timeout_s`."""
    from grpo_repro.gpus import free_port

    port = free_port()
    argv = (command or (lambda p: server_command(str(model), p, dtype)))(port)
    url = f"http://{HOST}:{port}"
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(gpu), "VLLM_SERVER_DEV_MODE": "1"}
    print(f"[vllm_server] GPU {gpu}, {url}, log {log_path}: {' '.join(argv)}", flush=True)
    old_handler, proc = None, None
    if threading.current_thread() is threading.main_thread():
        old_handler = signal.signal(signal.SIGTERM, _raise_on_sigterm)
    try:
        with open(log_path, "a") as log:  # appended: a rerun never erases an earlier start
            proc = subprocess.Popen(
                # under the guard, which ends the server's group if this job dies, even by SIGKILL
                [sys.executable, "-m", "grpo_repro.train.vllm_server", str(os.getpid()), *argv],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,  # its own process group: stop() ends its workers too
            )
        deadline = time.monotonic() + startup_timeout_s
        while not _healthy(url):
            if proc.poll() is not None:
                raise ServerError(
                    f"the vLLM server exited with status {proc.returncode} before answering "
                    f"{url}/health; the end of {log_path}:\n{log_tail(log_path)}"
                )
            if time.monotonic() > deadline:
                raise ServerError(
                    f"the vLLM server did not answer {url}/health within {startup_timeout_s:.0f} "
                    f"s; the end of {log_path}:\n{log_tail(log_path)}"
                )
            time.sleep(poll_s)
        print(f"[vllm_server] up at {url}", flush=True)
        yield url
    finally:
        if proc is not None:
            stop(proc, grace_s)
        if old_handler is not None:
            signal.signal(signal.SIGTERM, old_handler)


GUARD_GRACE_S = 10.0  # seconds the guard gives the server to exit after SIGTERM
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
        # that outlives GUARD_GRACE_S
        with contextlib.suppress(ProcessLookupError):
            server.terminate()
        signal.signal(signal.SIGALRM, kill_group)
        signal.alarm(int(GUARD_GRACE_S))

    signal.signal(signal.SIGTERM, end)
    code = server.wait()
    if signal.getsignal(signal.SIGALRM) is kill_group:  # stopped: end what the server left
        kill_group()
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
