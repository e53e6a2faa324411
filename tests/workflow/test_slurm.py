"""The SLURM profile on a real (one-node, localhost) SLURM cluster started by the test itself.

1. The real rules of the fast stages (the theory stage's outputs and the plan's figures_targets()
   of the Snakefile; the default tier takes Figure 1's compute and plot rules, `-m slow` adds the
   theory stage's job) run through `snakemake --executor slurm --workflow-profile
   workflow/profiles/slurm`: every job is an sbatch job with its SLURM log, and the outputs equal
   those of a local run (timings aside).
2. (-m slow) A tiny Snakefile with the profile's GPU rule names (each declaring a `gpu` resource, as the
   real rules do) checks what SLURM granted: the GPU rules' GPUs (the profile's, else the rule's),
   CPUs, memory, time limit, partition and one node as the profile states them, a failing job
   reported with its SLURM log path, and a retry asking for more memory (mem_mb grows with attempt).

Needs slurm-wlm and munge (.ci/install_slurm.sh) and root; skips, saying so, where they are absent.
The cluster uses no accounting, so the runs pass --slurm-status-command squeue (sacct answers
"accounting storage is disabled"), plus two polling intervals of 1 s to keep the test fast.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
import yaml

from tests.helpers import copy_workflow, small_figures, snakemake
from tests.helpers.slurm_cluster import SlurmCluster, missing_binaries
from tests.helpers.slurm_workflow import (
    CLUSTER_FLAGS,
    GPU_RULES,
    PROFILE,
    SUBMITTED,
    assert_same_output,
    fast_stage_targets,
    jobs_by_rule,
    resource,
    rule_resources,
    slurm_time_minutes,
)

pytestmark = pytest.mark.slurm
# the `gpu` resource of the tiny Snakefile's GPU rules, as the real rules declare one (common.smk
# gpus); the profile's set-resources overrides it where it names `gpu` (train_grpo: TRAIN_GPUS)
TINY_GPUS = {"train_reference": 1, "train_grpo": 2, "evaluate_reference": 1, "evaluate_run": 1}


def rule_gpus(rule: str, res: dict[str, str]) -> int:
    """The GPUs a GPU rule's job gets: the profile's `gpu`, else the rule's own."""
    return int(resource(res, "gpu")) if "gpu" in res else TINY_GPUS[rule]


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    missing = missing_binaries()
    if missing:
        pytest.skip(
            f"SLURM/munge programs not installed ({', '.join(missing)}); run .ci/install_slurm.sh"
        )
    if os.geteuid() != 0:
        pytest.skip("the throw-away SLURM cluster runs its daemons as root (SlurmUser=root)")
    # a node that holds every GPU job of the tiny Snakefile at once (fake GPUs: /dev/null devices),
    # so that they run side by side, not one after another
    gpus, cpus, mem = 0, 0, 4000
    for rule in GPU_RULES:
        res = rule_resources(rule)
        n = rule_gpus(rule, res)
        gpus += n
        cpus += n * int(resource(res, "cpus_per_gpu")) if "cpus_per_gpu" in res else n
        mem += int(resource(res, "mem_mb", attempt=2)) if "mem_mb" in res else 0
    cpus = max(cpus, os.cpu_count() or 1)
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"), cpus=cpus, mem_mb=mem * 2, gpus=gpus)
    t0 = time.time()
    cluster.start()
    print(
        f"SLURM cluster up in {time.time() - t0:.1f} s: node {cluster.node}, {cpus} CPUs, {gpus} GPUs"
    )
    yield cluster
    cluster.stop()


# --------------------------------------------------------------------------- tests
# the default tier: one figure family (compute rule + plot rule), the same path through sbatch as
# every other CPU job; the marked tier adds the theory stage's job. Every figure family's two rules
# come from one template (figures.smk) and run the same two scripts, so one family stands for all;
# that every figure's data is the same in two cold runs is the fault-tolerance check's
# (workflow/checks/fault_tolerance.py, tests/workflow/test_fault_tolerance.py).
SAMPLE = {"sample": ("results/figures/fig1_weights.",)}
SAMPLE["theory"] = (*SAMPLE["sample"], "results/theory/")


@pytest.mark.parametrize("subset", ["sample", pytest.param("theory", marks=pytest.mark.slow)])
def test_fast_stages_through_sbatch_match_local_run(slurm_cluster, tmp_path, subset):
    local_dir = copy_workflow(tmp_path / "local")
    slurm_dir = copy_workflow(tmp_path / "slurm")
    targets = [t for t in fast_stage_targets(local_dir) if t.startswith(SAMPLE[subset])]
    # fig1 .csv/.png/.pdf, and derivations .json/.md
    assert len(targets) == {"sample": 3, "theory": 5}[subset], targets
    # the figures' small grids (the same rules and files, fewer points), in both copies
    for wd in (local_dir, slurm_dir):
        (wd / "config" / "small.yaml").write_text(yaml.safe_dump({"figures": small_figures()}))
    small = ["--configfile", "config/config.yaml", "config/small.yaml"]  # after the targets

    local = snakemake(
        ["--workflow-profile", "workflow/profiles/local", *targets, *small], cwd=local_dir
    )
    assert local.returncode == 0, local.log
    local_rules = sorted(
        r.removeprefix("local:") for r in jobs_by_rule(local.log).values()
    )  # all "localrule" there
    assert local_rules, local.log

    # the command a user runs (plus the test-only flags), on the default configuration
    run = snakemake(
        [
            "--executor",
            "slurm",
            "--workflow-profile",
            "workflow/profiles/slurm",
            *CLUSTER_FLAGS,
            *targets,
            *small,  # last: --configfile takes every argument after it
        ],
        cwd=slurm_dir,
        env=slurm_cluster.env,
    )
    assert run.returncode == 0, run.log
    jobs = jobs_by_rule(run.log)
    submitted = {
        jobid: (slurm_id, Path(log)) for jobid, slurm_id, log in SUBMITTED.findall(run.log)
    }

    # every job of the run went through sbatch, none ran in the snakemake process
    assert not [r for r in jobs.values() if r.startswith("local:")], run.log
    assert set(submitted) == set(jobs), run.log
    assert sorted(jobs.values()) == local_rules, "the SLURM run ran other jobs than the local run"
    logdir = slurm_dir / ".snakemake" / "slurm_logs"
    for jobid, (slurm_id, log) in submitted.items():
        rule = jobs[jobid]
        assert (
            log.parent.is_relative_to(logdir / f"rule_{rule}") and log.name == f"{slurm_id}.log"
        ), log
        text = log.read_text()
        assert f"rule {rule}:" in text, f"SLURM log {log} is not the log of rule {rule}:\n{text}"
    assert {p.name for p in logdir.iterdir()} == {f"rule_{r}" for r in jobs.values()}

    for target in targets:
        assert_same_output(local_dir / target, slurm_dir / target)


TINY_SNAKEFILE = r"""
SHOW_JOB = "scontrol show job -o $SLURM_JOB_ID"


rule all:
    input:
        "flaky.txt", "never.txt", "train_reference.job", "train_grpo.job", "evaluate_reference.job", "evaluate_run.job",


rule flaky:  # fails on its first attempt; the retry must get more memory
    output:
        "flaky.txt",
    shell:
        "echo mem_mb={resources.mem_mb} job=$SLURM_JOB_ID $({SHOW_JOB} | grep -o 'MinMemoryNode=[^ ]*') >> attempts.txt; "
        "if [ $(wc -l < attempts.txt) -lt 2 ]; then echo 'flaky: failing on purpose' >&2; exit 1; fi; "
        "cp attempts.txt {output}"


rule always_fails:
    output:
        "never.txt",
    retries: 0
    shell:
        "echo 'always_fails: boom' >&2; exit 3"


for _name in ("train_reference", "train_grpo", "evaluate_reference", "evaluate_run"):  # the profile's GPU rules

    rule:
        name:
            _name
        output:
            f"{_name}.job",
        resources:
            gpu=TINY_GPUS[_name],
        shell:
            "{SHOW_JOB} > {output}; echo CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES >> {output}"
"""


@pytest.mark.slow  # a failing job, a retry and every GPU rule through SLURM (about 55 s)
def test_gpu_resources_failure_report_and_retry_memory(slurm_cluster, tmp_path):
    (tmp_path / "Snakefile").write_text(f"TINY_GPUS = {TINY_GPUS!r}\n" + TINY_SNAKEFILE)
    run = snakemake(
        ["--executor", "slurm", "--workflow-profile", str(PROFILE), *CLUSTER_FLAGS],
        cwd=tmp_path,
        env=slurm_cluster.env,
    )
    assert run.returncode != 0, run.log  # always_fails fails; keep-going (profile) runs the rest
    jobs = jobs_by_rule(run.log)
    submitted = SUBMITTED.findall(run.log)
    assert submitted and all(jobid in jobs for jobid, _, _ in submitted), run.log

    # 1. the failure names the SLURM job and its log, which holds the job's stderr
    block = run.log.split("Error in rule always_fails:", 1)[1].split("external_jobid", 1)[0]
    slurm_id = re.search(r"SLURM-job '(\d+)' failed", block).group(1)
    log = Path(re.search(r"log: (\S+\.log)", block).group(1))
    assert log == tmp_path / ".snakemake" / "slurm_logs" / "rule_always_fails" / f"{slurm_id}.log"
    assert "always_fails: boom" in log.read_text()

    # 2. retry with more memory: attempt 1 failed, attempt 2 got mem_mb(attempt=2) from SLURM
    assert "Trying to restart job" in run.log
    flaky_res = rule_resources("flaky")
    lines = (tmp_path / "flaky.txt").read_text().splitlines()
    assert len(lines) == 2, lines
    for attempt, line in enumerate(lines, start=1):
        want = int(resource(flaky_res, "mem_mb", attempt))
        assert f"mem_mb={want} " in line and f"MinMemoryNode={want}M" in line, (attempt, line)
    assert int(resource(flaky_res, "mem_mb", 2)) > int(resource(flaky_res, "mem_mb", 1))

    # 3. the GPU rules got what the profile asks for
    for rule in GPU_RULES:
        res = rule_resources(rule)
        info = (tmp_path / f"{rule}.job").read_text()
        fields = dict(re.findall(r"(\w+)=(\S+)", info))
        gpus, cpus_per_gpu = rule_gpus(rule, res), int(resource(res, "cpus_per_gpu"))
        model = f"{resource(res, 'gpu_model')}:" if "gpu_model" in res else ""
        assert fields["TresPerJob"] == f"gres:gpu:{model}{gpus}", (
            rule,
            fields["TresPerJob"],
        )  # sbatch --gpus
        assert fields["CpusPerTres"] == f"gres:gpu:{cpus_per_gpu}", (rule, fields["CpusPerTres"])
        assert fields["NumCPUs"] == str(gpus * cpus_per_gpu), (rule, fields["NumCPUs"])
        assert fields["MinMemoryNode"] == f"{int(resource(res, 'mem_mb'))}M", (rule, info)
        assert slurm_time_minutes(fields["TimeLimit"]) == int(resource(res, "runtime")), (
            rule,
            fields["TimeLimit"],
        )
        if "slurm_partition" in res:
            assert fields["Partition"] == resource(res, "slurm_partition"), (
                rule,
                fields["Partition"],
            )
        assert len(fields["CUDA_VISIBLE_DEVICES"].split(",")) == gpus, (rule, info)
        assert fields["NumNodes"] == "1", (rule, fields["NumNodes"])  # sbatch --nodes=1
