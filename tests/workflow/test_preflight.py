"""Preflight in the workflow (grpo_repro.preflight via common.smk's on_start): a local run that asks
for what the machine lacks stops when it starts, before any job, naming the key, file and line; a
dry run and a cluster executor's login node (here: the SLURM executor with fake, refusing SLURM
commands) get past the start, the device being checked by the jobs on the GPU nodes."""

import os

from tests.helpers import copy_workflow, snakemake

TARGET = "results/theory/derivations.json"  # a small graph: the start is what is tested


def run(work, *args, path_prefix=None):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")  # no GPU, whatever the test machine has
    if path_prefix:
        env["PATH"] = f"{path_prefix}{os.pathsep}{env['PATH']}"
    res = snakemake([TARGET, *args], work, env, timeout=300)
    return res.returncode, res.log


def test_local_run_stops_at_start_naming_the_key(tmp_path):
    work = copy_workflow(tmp_path / "wf")
    (work / "bf16.yaml").write_text("train: {bf16: true}\n")
    config = ["--configfile", "config/paper.yaml", "config/smoke.yaml", "bf16.yaml"]
    rc, out = run(work, "-n", *config)
    assert rc == 0, out  # a dry run only builds the graph
    rc, out = run(work, "-c1", *config)
    assert rc != 0
    assert "this run cannot start" in out and "config key 'train.bf16' (" in out, out
    assert f"{work / 'bf16.yaml'}:1)" in out
    assert "CUDA" in out
    assert not (work / "results").exists(), "a job ran before the check"


def test_cluster_executor_defers_the_device_to_the_jobs(tmp_path):
    work = copy_workflow(tmp_path / "wf")
    (work / "bf16.yaml").write_text("train: {bf16: true}\n")
    fake = tmp_path / "bin"
    fake.mkdir()
    for cmd in ("sbatch", "sacct", "squeue", "sinfo", "scontrol", "sacctmgr", "scancel", "srun"):
        (fake / cmd).write_text(f'#!/bin/sh\necho "fake slurm: {cmd} refused" >&2\nexit 1\n')
        (fake / cmd).chmod(0o755)
    rc, out = run(
        work,
        "--executor",
        "slurm",
        "-j1",
        "--slurm-init-seconds-before-status-checks",
        "1",
        "--seconds-between-status-checks",
        "1",
        "--configfile",
        "config/paper.yaml",
        "config/smoke.yaml",
        "bf16.yaml",
        path_prefix=fake,
    )
    assert rc != 0  # the fake cluster refuses every job ...
    assert "this run cannot start" not in out, out  # ... but the login node's start passed
    assert "Job submission failed" in out and "fake slurm" in out, out


def test_dry_run_needs_no_hub_but_a_run_checks_it_at_start(tmp_path):
    """The hub's model is checked by on_start, which Snakemake never calls in a dry run (no guess
    from the command line): offline and uncached, `-n` builds the graph and a run stops at start
    naming the model, before any job."""
    work = copy_workflow(tmp_path / "wf")
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "empty_cache"))
    args = [TARGET, "--configfile", "config/paper.yaml"]
    res = snakemake(["-n", *args], work, env, timeout=300)
    assert res.returncode == 0, res.log
    res = snakemake(["-c1", *args], work, env, timeout=300)
    assert res.returncode != 0
    assert "Qwen/Qwen2.5-0.5B-Instruct" in res.log and "not in the local cache" in res.log, res.log
    assert not (work / "results").exists(), "a job ran before the check"
