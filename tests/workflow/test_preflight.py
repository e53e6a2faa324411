"""Preflight in the workflow (grpo_repro.preflight via common.smk's on_start): a local run that asks
for what the machine lacks stops when it starts, before any job, naming the key, file and line; a
dry run and a cluster executor's login node (here: the SLURM executor with fake, refusing SLURM
commands) get past the start, the device being checked by the jobs on the GPU nodes."""

import os

from tests.helpers import copy_workflow, rehearsal, snakemake

TARGET = "results/theory/derivations.json"  # a small graph: the start is what is tested


def run(work, hf_home, *args, path_prefix=None, timeout=300):
    """(exit status or None when cut at `timeout`, output) of a run on the rehearsal's hub cache."""
    import subprocess

    # no GPU, whatever the test machine has; the hub's files in the rehearsal's cache
    env = rehearsal.env(hf_home, CUDA_VISIBLE_DEVICES="")
    if path_prefix:
        env["PATH"] = f"{path_prefix}{os.pathsep}{env['PATH']}"
    try:
        res = snakemake([TARGET, *args], work, env, timeout=timeout)
    except subprocess.TimeoutExpired as cut:  # what it printed until then
        out = [x.decode() if isinstance(x, bytes) else x or "" for x in (cut.stdout, cut.stderr)]
        return None, "".join(out)
    return res.returncode, res.log


def test_local_run_stops_at_start_naming_the_key(tmp_path, hub_cache):
    work = copy_workflow(tmp_path / "wf")
    (work / "bf16.yaml").write_text("train: {bf16: true}\n")
    config = [*rehearsal.CONFIG_ARGS, "bf16.yaml"]
    rc, out = run(work, hub_cache, "-n", *config)
    assert rc == 0, out  # a dry run only builds the graph
    rc, out = run(work, hub_cache, "-c1", *config)
    assert rc != 0
    assert "this run cannot start" in out and "config key 'train.bf16' (" in out, out
    assert f"{work / 'bf16.yaml'}:1)" in out
    assert "CUDA" in out
    assert not (work / "results").exists(), "a job ran before the check"


def test_cluster_executor_defers_the_device_to_the_jobs(tmp_path, hub_cache):
    work = copy_workflow(tmp_path / "wf")
    (work / "bf16.yaml").write_text("train: {bf16: true}\n")
    fake = tmp_path / "bin"
    fake.mkdir()
    for cmd in ("sbatch", "sacct", "squeue", "sinfo", "scontrol", "sacctmgr", "scancel", "srun"):
        (fake / cmd).write_text(f'#!/bin/sh\necho "fake slurm: {cmd} refused" >&2\nexit 1\n')
        (fake / cmd).chmod(0o755)
    env = rehearsal.env(hub_cache, CUDA_VISIBLE_DEVICES="")
    env["PATH"] = f"{fake}{os.pathsep}{env['PATH']}"
    args = ["--executor", "slurm", "-j1", *rehearsal.CONFIG_ARGS, "bf16.yaml"]
    # the fake cluster refuses every command (the SLURM plugin 2.6.1 then waits, for as long as
    # one lets it): the run is stopped once the first refusal is printed, after the start ...
    rc, out = _until(work, env, [TARGET, *args], "fake slurm")
    assert rc != 0
    assert "this run cannot start" not in out, out  # ... but the login node's start passed
    assert "Execute 1 jobs" in out and "fake slurm" in out, out


def _until(work, env, args, said, timeout=300):
    """(exit status, output) of `python -m snakemake *args`, stopped (SIGKILL to its process
    group) as soon as its output holds `said`, or at `timeout`."""
    import signal
    import subprocess
    import sys
    import time

    log = work / "until.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen(
            [sys.executable, "-m", "snakemake", *args],
            cwd=work,
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        end = time.time() + timeout
        while proc.poll() is None and time.time() < end and said not in log.read_text():
            time.sleep(0.5)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        rc = proc.wait()
    return rc, log.read_text()


def test_dry_run_needs_no_hub_but_a_run_checks_it_at_start(tmp_path):
    """The hub's files are checked by on_start, which Snakemake never calls in a dry run (no guess
    from the command line): uncached, `-n` builds the graph and a run stops at start naming the
    model, the data and the prefetch, before any job (no job ever reaches the hub)."""
    work = copy_workflow(tmp_path / "wf")
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "empty_cache"))
    args = [TARGET, "--configfile", "config/paper.yaml"]
    res = snakemake(["-n", *args], work, env, timeout=300)
    assert res.returncode == 0, res.log
    res = snakemake(["-c1", *args], work, env, timeout=300)
    assert res.returncode != 0
    assert "Qwen/Qwen2.5-0.5B-Instruct" in res.log and "python -m grpo_repro.prefetch" in res.log
    assert (
        "config key 'model.name_or_path'" in res.log and "config key 'data.train_path'" in res.log
    )
    assert not (work / "results").exists(), "a job ran before the check"
