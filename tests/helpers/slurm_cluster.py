"""A throw-away one-node SLURM cluster on localhost, started in seconds (tests and manual checks).

Everything lives in one directory: a generated munge key, munged's socket, slurm.conf, gres.conf,
state, spool, logs and pid files. Nothing system-wide is touched: munged gets its own key and
socket (slurm.conf's AuthInfo=socket=... points SLURM at it), the daemons listen on free ports of
127.0.0.1, and the client commands find the cluster through SLURM_CONF (set it, or use `env`).
Accounting is off (no slurmdbd): `sacct` answers "accounting storage is disabled", so the
snakemake executor must use `--slurm-status-command squeue` (MinJobAge is 300 s here).

Needs the Debian packages slurm-wlm and munge (.ci/install_slurm.sh) and root (SlurmUser=root).

    python -m tests.helpers.slurm_cli start DIR [--gpus 8 --cpus 128 --mem-mb 1000000]
        prints `export SLURM_CONF=DIR/slurm.conf` and `export PATH=DIR/bin:$PATH` (eval it);
        idempotent: a running cluster in DIR is kept
    python -m tests.helpers.slurm_cli stop DIR     cancels all jobs, stops the daemons
    python -m tests.helpers.slurm_cli status DIR

The node is the machine itself (NodeName=`hostname -s`, NodeAddr=127.0.0.1) with its real CPUs
and memory unless --cpus/--mem-mb/--gpus declare a bigger "GPU node shape" (SlurmdParameters=
config_overrides; GPUs are /dev/null links, so jobs get CUDA_VISIBLE_DEVICES but no device):
that lets a test submit the GPU rules' real resource requests. Partitions: `cpu` (default) and
`gpu`, both holding the node.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from tests.helpers.slurm_files import CLIENTS, prepare, which

DAEMONS = ("munged", "slurmctld", "slurmd")


def missing_binaries() -> list[str]:
    """Names of the SLURM/munge programs not found on PATH (or in /usr/sbin)."""
    return [name for name in DAEMONS + CLIENTS if which(name) is None]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is dead for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _proc_mentions(pid: int, needle: str) -> bool:
    try:
        return needle.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


class SlurmCluster:
    """One-node SLURM cluster rooted at `root` (a directory of its own; created if missing)."""

    def __init__(
        self,
        root: os.PathLike | str,
        *,
        cpus: int | None = None,
        mem_mb: int | None = None,
        gpus: int = 0,
    ):
        self.root = Path(root).resolve()
        self.cpus, self.mem_mb, self.gpus = cpus, mem_mb, gpus
        self.conf = self.root / "slurm.conf"
        self.socket = self.root / "munge" / "munge.socket"
        self.pidfile = self.root / "pids.json"
        self.node = socket.gethostname().split(".")[0] or "localhost"
        self._children: dict[int, subprocess.Popen] = {}

    # ------------------------------------------------------------------ public
    @property
    def env(self) -> dict[str, str]:
        """os.environ plus SLURM_CONF: pass to every subprocess that talks to this cluster."""
        env = dict(os.environ)
        env["SLURM_CONF"] = str(self.conf)
        # shims first on PATH: they re-export SLURM_CONF (see _write_shims)
        env["PATH"] = f"{self.root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        for key in list(env):  # a surrounding allocation must not leak into ours
            if key.startswith(("SLURM_JOB", "SLURM_STEP", "SBATCH_", "SRUN_")):
                env.pop(key)
        return env

    def running(self) -> bool:
        pids = self._recorded_pids()
        if set(pids) != set(DAEMONS) or not all(_pid_alive(p) for p in pids.values()):
            return False
        return self._cmd("scontrol", "ping", check=False).returncode == 0

    def start(self, timeout: float = 60) -> SlurmCluster:
        if self.running() and self.node_state() in ("idle", "mixed", "allocated"):
            return self
        self.stop()
        self._prepare()
        self._spawn(
            "munged",
            [
                which("munged"),
                "--foreground",
                "--force",
                f"--key-file={self.root / 'munge' / 'key' / 'munge.key'}",
                f"--socket={self.socket}",
                f"--pid-file={self.root / 'munge' / 'munged.pid'}",
                f"--log-file={self.root / 'log' / 'munged.log'}",
                f"--seed-file={self.root / 'munge' / 'munged.seed'}",
            ],
        )
        self._wait(lambda: self.socket.exists(), timeout, "munged socket")
        self._spawn("slurmctld", [which("slurmctld"), "-D", "-i", "-f", str(self.conf)])
        self._wait(
            lambda: self._cmd("scontrol", "ping", check=False).returncode == 0, timeout, "slurmctld"
        )
        self._spawn("slurmd", [which("slurmd"), "-D", "-f", str(self.conf), "-N", self.node])
        self._wait(lambda: self.node_state() == "idle", timeout, "node idle in sinfo")
        return self

    def node_state(self) -> str:
        res = self._cmd("sinfo", "--noheader", "--node", self.node, "--format=%t", check=False)
        return (
            res.stdout.split()[0].rstrip("*~#!%$@^-")
            if res.returncode == 0 and res.stdout.split()
            else ""
        )

    def stop(self) -> None:
        """Cancel every job of this cluster, then stop slurmd, slurmctld and munged."""
        pids = self._recorded_pids()
        if pids.get("slurmctld") and _pid_alive(pids["slurmctld"]):
            self._cmd("scancel", "--full", "--user", str(os.getuid()), check=False, timeout=10)
            deadline = time.time() + 10
            while (
                time.time() < deadline
                and self._cmd(
                    "squeue",
                    "--noheader",
                    "--states=RUNNING,PENDING,COMPLETING",
                    check=False,
                    timeout=10,
                ).stdout.strip()
            ):
                time.sleep(0.5)
        for name in reversed(DAEMONS):
            pid = pids.get(name)
            if pid and _pid_alive(pid) and _proc_mentions(pid, str(self.root)):
                self._terminate(pid)
        self._kill_job_leftovers()
        self.pidfile.unlink(missing_ok=True)

    def sbatch(self, *args: str) -> str:
        """Submit with sbatch --parsable; returns the job id."""
        return self._cmd("sbatch", "--parsable", *args).stdout.strip().split(";")[0]

    # ---------------------------------------------------------------- internals
    def _cmd(
        self, name: str, *args: str, check: bool = True, timeout: float = 30
    ) -> subprocess.CompletedProcess:
        return subprocess.run(
            [which(name) or name, *args],
            capture_output=True,
            text=True,
            env=self.env,
            check=check,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def _recorded_pids(self) -> dict[str, int]:
        try:
            return {k: int(v) for k, v in json.loads(self.pidfile.read_text()).items()}
        except (OSError, ValueError):
            return {}

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.root / "log" / f"{name}.stdout", "ab")
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
            start_new_session=True,
            cwd=self.root,
        )
        log.close()
        self._children[proc.pid] = proc
        pids = self._recorded_pids()
        pids[name] = proc.pid
        self.pidfile.write_text(json.dumps(pids))
        time.sleep(0.2)
        if proc.poll() is not None:
            raise RuntimeError(
                f"{name} exited at once ({proc.returncode}); see {self.root / 'log'}:\n"
                + self._log_tail()
            )

    def _terminate(self, pid: int) -> None:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.time() + 10
        while time.time() < deadline and _pid_alive(pid):
            if pid in self._children and self._children[pid].poll() is not None:
                break
            time.sleep(0.1)
        if _pid_alive(pid):
            os.kill(pid, signal.SIGKILL)
        if pid in self._children:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._children.pop(pid).wait(timeout=5)

    def _kill_job_leftovers(self) -> None:
        """slurmstepd processes (and their jobs) of this cluster that outlived scancel."""
        needle = f"SLURM_CONF={self.conf}\0".encode()
        ancestors = set()
        pid = os.getpid()
        while pid > 1:
            ancestors.add(pid)
            try:
                pid = int(Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[1])
            except (OSError, ValueError, IndexError):
                break
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) in ancestors:
                continue
            try:
                environ = (entry / "environ").read_bytes()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            # only slurmstepd and processes inside a job of this cluster (SLURM_JOB_ID set)
            if needle in environ and (
                cmdline.startswith(b"slurmstepd") or b"\0SLURM_JOB_ID=" in b"\0" + environ
            ):
                with contextlib.suppress(OSError):
                    os.kill(int(entry.name), signal.SIGKILL)

    def _prepare(self) -> None:
        prepare(self)

    def _wait(self, ready, timeout: float, what: str) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if ready():
                return
            for name, pid in self._recorded_pids().items():
                if not _pid_alive(pid):
                    raise RuntimeError(f"{name} died while waiting for {what}:\n{self._log_tail()}")
            time.sleep(0.25)
        raise TimeoutError(f"SLURM: no {what} after {timeout:.0f} s:\n{self._log_tail()}")

    def _log_tail(self, n: int = 15) -> str:
        parts = []
        for log in sorted((self.root / "log").glob("*")):
            lines = log.read_text(errors="replace").splitlines()[-n:]
            parts.append(f"== {log}\n" + "\n".join(lines))
        return "\n".join(parts)
