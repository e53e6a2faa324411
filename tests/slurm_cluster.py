"""A throw-away one-node SLURM cluster on localhost, started in seconds (tests and manual checks).

Everything lives in one directory: a generated munge key, munged's socket, slurm.conf, gres.conf,
state, spool, logs and pid files. Nothing system-wide is touched: munged gets its own key and
socket (slurm.conf's AuthInfo=socket=... points SLURM at it), the daemons listen on free ports of
127.0.0.1, and the client commands find the cluster through SLURM_CONF (set it, or use `env`).
Accounting is off (no slurmdbd): `sacct` answers "accounting storage is disabled", so the
snakemake executor must use `--slurm-status-command squeue` (MinJobAge is 300 s here).

Needs the Debian packages slurm-wlm and munge (.ci/install_slurm.sh) and root (SlurmUser=root).

    python tests/slurm_cluster.py start DIR [--gpus 8 --cpus 128 --mem-mb 1000000]
        prints `export SLURM_CONF=DIR/slurm.conf` and `export PATH=DIR/bin:$PATH` (eval it);
        idempotent: a running cluster in DIR is kept
    python tests/slurm_cluster.py stop DIR     cancels all jobs, stops the daemons
    python tests/slurm_cluster.py status DIR

The node is the machine itself (NodeName=`hostname -s`, NodeAddr=127.0.0.1) with its real CPUs
and memory unless --cpus/--mem-mb/--gpus declare a bigger "GPU node shape" (SlurmdParameters=
config_overrides; GPUs are /dev/null links, so jobs get CUDA_VISIBLE_DEVICES but no device):
that lets a test submit the GPU rules' real resource requests. Partitions: `cpu` (default) and
`gpu`, both holding the node.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "sinfo", "scontrol", "scancel")


def missing_binaries() -> list[str]:
    """Names of the SLURM/munge programs not found on PATH (or in /usr/sbin)."""
    return [name for name in DAEMONS + CLIENTS if _which(name) is None]


def _which(name: str) -> str | None:
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/local/sbin")


def _free_ports(n: int) -> list[int]:
    """n distinct TCP ports free on 127.0.0.1 (all held open together, so they differ)."""
    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _hardware() -> tuple[int, int]:
    """(CPUs, RealMemory in MB) as slurmd sees them."""
    out = subprocess.run([_which("slurmd"), "-C"], capture_output=True, text=True).stdout
    cpus = re.search(r"\bCPUs=(\d+)", out)
    mem = re.search(r"\bRealMemory=(\d+)", out)
    return (int(cpus.group(1)) if cpus else os.cpu_count() or 1, int(mem.group(1)) if mem else 1000)


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

    def __init__(self, root: os.PathLike | str, *, cpus: int | None = None, mem_mb: int | None = None,
                 gpus: int = 0):
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

    def start(self, timeout: float = 60) -> "SlurmCluster":
        if self.running() and self.node_state() in ("idle", "mixed", "allocated"):
            return self
        self.stop()
        self._prepare()
        self._spawn("munged", [_which("munged"), "--foreground", "--force",
                               f"--key-file={self.root / 'munge' / 'key' / 'munge.key'}",
                               f"--socket={self.socket}", f"--pid-file={self.root / 'munge' / 'munged.pid'}",
                               f"--log-file={self.root / 'log' / 'munged.log'}",
                               f"--seed-file={self.root / 'munge' / 'munged.seed'}"])
        self._wait(lambda: self.socket.exists(), timeout, "munged socket")
        self._spawn("slurmctld", [_which("slurmctld"), "-D", "-i", "-f", str(self.conf)])
        self._wait(lambda: self._cmd("scontrol", "ping", check=False).returncode == 0, timeout, "slurmctld")
        self._spawn("slurmd", [_which("slurmd"), "-D", "-f", str(self.conf), "-N", self.node])
        self._wait(lambda: self.node_state() == "idle", timeout, "node idle in sinfo")
        return self

    def node_state(self) -> str:
        res = self._cmd("sinfo", "--noheader", "--node", self.node, "--format=%t", check=False)
        return res.stdout.split()[0].rstrip("*~#!%$@^-") if res.returncode == 0 and res.stdout.split() else ""

    def stop(self) -> None:
        """Cancel every job of this cluster, then stop slurmd, slurmctld and munged."""
        pids = self._recorded_pids()
        if pids.get("slurmctld") and _pid_alive(pids["slurmctld"]):
            self._cmd("scancel", "--full", "--user", str(os.getuid()), check=False, timeout=10)
            deadline = time.time() + 10
            while time.time() < deadline and self._cmd("squeue", "--noheader", "--states=RUNNING,PENDING,COMPLETING",
                                                      check=False, timeout=10).stdout.strip():
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
    def _cmd(self, name: str, *args: str, check: bool = True, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run([_which(name) or name, *args], capture_output=True, text=True, env=self.env,
                              check=check, timeout=timeout, stdin=subprocess.DEVNULL)

    def _recorded_pids(self) -> dict[str, int]:
        try:
            return {k: int(v) for k, v in json.loads(self.pidfile.read_text()).items()}
        except (OSError, ValueError):
            return {}

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.root / "log" / f"{name}.stdout", "ab")
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                env=self.env, start_new_session=True, cwd=self.root)
        log.close()
        self._children[proc.pid] = proc
        pids = self._recorded_pids()
        pids[name] = proc.pid
        self.pidfile.write_text(json.dumps(pids))
        time.sleep(0.2)
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited at once ({proc.returncode}); see {self.root / 'log'}:\n"
                               + self._log_tail())

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
            try:
                self._children.pop(pid).wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass

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
            if needle in environ and (cmdline.startswith(b"slurmstepd") or b"\0SLURM_JOB_ID=" in b"\0" + environ):
                try:
                    os.kill(int(entry.name), signal.SIGKILL)
                except OSError:
                    pass

    def _prepare(self) -> None:
        for sub in ("state", "spool", "log", "munge/key", "dev", "bin"):
            path = self.root / sub
            if sub in ("state", "spool", "dev", "bin") and path.exists():
                shutil.rmtree(path)
            path.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root / "munge", 0o755)  # munged wants the socket's directory traversable
        os.chmod(self.root / "munge" / "key", 0o700)
        key = self.root / "munge" / "key" / "munge.key"
        if not key.exists():
            fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(secrets.token_bytes(128))
        self.socket.unlink(missing_ok=True)
        self._write_shims()
        hw_cpus, hw_mem = _hardware()
        cpus = max(self.cpus or hw_cpus, 1)
        mem = max(self.mem_mb or hw_mem, 100)
        gres_line = ""
        if self.gpus:
            for i in range(self.gpus):
                (self.root / "dev" / f"gpu{i}").symlink_to("/dev/null")  # a character device, as gres wants
            gres_line = f" Gres=gpu:{self.gpus}"
            (self.root / "gres.conf").write_text(
                f"AutoDetect=off\nNodeName={self.node} Name=gpu File={self.root / 'dev'}/gpu[0-{self.gpus - 1}]\n")
        else:
            (self.root / "gres.conf").write_text("AutoDetect=off\n")
        r = self.root
        ctld_port, slurmd_port = _free_ports(2)
        self.conf.write_text(f"""# generated by tests/slurm_cluster.py
ClusterName=localtest
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser={_user()}
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.socket}
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool
SlurmctldPidFile={r}/slurmctld.pid
SlurmdPidFile={r}/slurmd.pid
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
ReturnToService=2
MinJobAge=300
InactiveLimit=0
KillWait=5
SlurmdTimeout=300
SlurmdParameters=config_overrides
GresTypes=gpu
NodeName={self.node} NodeAddr=127.0.0.1 NodeHostname={self.node} CPUs={cpus} RealMemory={mem}{gres_line} State=UNKNOWN
PartitionName=cpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=ALL MaxTime=INFINITE State=UP
""")

    def _write_shims(self) -> None:
        """bin/<client> wrappers that set SLURM_CONF and exec the real client.

        The slurm-jobstep executor runs each job as `srun ...` with every SLURM_* variable but a
        few job ids removed from the environment, SLURM_CONF included: on a real cluster srun
        then finds /etc/slurm/slurm.conf (or the configless cache); here, where the configuration
        is private, the srun on PATH (this shim) puts SLURM_CONF back.
        """
        for name in CLIENTS + ("srun", "sacct", "salloc", "sstat"):
            real = _which(name)
            if real is None:
                continue
            shim = self.root / "bin" / name
            shim.write_text(f'#!/bin/sh\nSLURM_CONF={shlex.quote(str(self.conf))}\nexport SLURM_CONF\n'
                            f'exec {shlex.quote(real)} "$@"\n')
            shim.chmod(0o755)

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


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("start", "stop", "status"))
    parser.add_argument("root", help="directory of the cluster (state, logs, slurm.conf)")
    parser.add_argument("--cpus", type=int, default=None, help="CPUs of the node (default: the machine's)")
    parser.add_argument("--mem-mb", type=int, default=None, help="RealMemory of the node (default: the machine's)")
    parser.add_argument("--gpus", type=int, default=0, help="fake GPUs (gres gpu backed by /dev/null)")
    args = parser.parse_args(argv)
    missing = missing_binaries()
    if missing:
        print(f"missing SLURM/munge programs: {', '.join(missing)} (run .ci/install_slurm.sh)", file=sys.stderr)
        return 2
    cluster = SlurmCluster(args.root, cpus=args.cpus, mem_mb=args.mem_mb, gpus=args.gpus)
    if args.action == "start":
        cluster.start()
        print(f"export SLURM_CONF={cluster.conf}")
        print(f"export PATH={cluster.root / 'bin'}:$PATH")
    elif args.action == "stop":
        cluster.stop()
    else:
        ok = cluster.running()
        print(f"{'running' if ok else 'stopped'}: node {cluster.node} {cluster.node_state() if ok else ''}".rstrip())
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
