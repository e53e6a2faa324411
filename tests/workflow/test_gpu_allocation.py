"""GPU jobs on one node: each job gets its own devices, and every GPU rule declares how many.

1. A small workflow on a fake 4-GPU node (GRPO_REPRO_GPUS=0,1,2,3): jobs declaring `gpu` 2 and 1
   run a stub script that takes its devices with grpo_repro.gpus.acquire, the code the real
   scripts use, and records which it held and when. No device is ever held by two jobs at once,
   every device is used and each job holds exactly what it declared, both with Snakemake's limit
   (`--resources gpu=4`: no job ever waits for a lock) and without it (the allocator alone: jobs
   wait for the locks).
2. The real workflow's dry runs: Snakemake prints each job's resources ("resources: gpu=7, ..."),
   and every GPU job of the paper configuration asks for what grpo_repro.gpus.job_gpus says
   (train_grpo: train.devices, plus 1 for a vLLM server; evaluation and KL: 1), while the default
   (CPU) configuration's jobs ask for none.
"""

from __future__ import annotations

import json
import os
import re
from itertools import combinations
from pathlib import Path

import pytest
import yaml

from tests.helpers import ROOT, snakemake

NODE = ["0", "1", "2", "3"]
JOBS = {"a": 2, "b": 2, "c": 2, "d": 1, "e": 1, "f": 1}  # job: the GPUs it declares

STUB_SNAKEFILE = """
JOBS = {jobs!r}


rule all:
    input:
        expand("done/{{name}}.json", name=JOBS),


rule job:
    output:
        "done/{{name}}.json",
    resources:
        gpu=lambda wildcards: JOBS[wildcards.name],
    script:
        "stub.py"
"""

STUB_SCRIPT = """
import json
import os
import time

from grpo_repro import gpus

asked = time.time()
with gpus.acquire(gpus.requested(snakemake.resources), poll_s=0.1) as ids:
    start = time.time()
    visible = os.environ["CUDA_VISIBLE_DEVICES"]
    time.sleep(1.0)
    end = time.time()
record = {"job": snakemake.wildcards.name, "ids": ids, "visible": visible, "asked": asked,
          "start": start, "end": end}
with open(snakemake.output[0], "w") as fh:
    json.dump(record, fh)
"""


def _run_stub(tmp_path: Path, *args: str) -> list[dict]:
    (tmp_path / "Snakefile").write_text(STUB_SNAKEFILE.format(jobs=JOBS))
    (tmp_path / "stub.py").write_text(STUB_SCRIPT)
    env = {
        **os.environ,
        "GRPO_REPRO_GPUS": ",".join(NODE),
        "GRPO_REPRO_GPU_LOCKS": str(tmp_path / "locks"),
        "PYTHONPATH": str(ROOT / "workflow" / "src"),
    }
    env.pop("SLURM_JOB_ID", None)
    env.pop("CUDA_VISIBLE_DEVICES", None)
    res = snakemake(["-c8", *args], tmp_path, env, timeout=300)
    assert res.returncode == 0, res.log
    return [json.loads(p.read_text()) for p in sorted((tmp_path / "done").glob("*.json"))]


def _check_allocation(records: list[dict]) -> None:
    assert sorted(r["job"] for r in records) == sorted(JOBS)
    for r in records:
        assert len(r["ids"]) == JOBS[r["job"]], r  # exactly the devices it declared
        assert len(set(r["ids"])) == len(r["ids"]) and set(r["ids"]) <= set(NODE), r
        assert r["visible"].split(",") == r["ids"], r  # CUDA_VISIBLE_DEVICES names them
    for a, b in combinations(records, 2):
        shared = set(a["ids"]) & set(b["ids"])
        overlap = a["start"] < b["end"] and b["start"] < a["end"]
        assert not (shared and overlap), f"GPU {sorted(shared)} held by two jobs at once: {a} {b}"
    assert {d for r in records for d in r["ids"]} == set(NODE), "a GPU of the node was never used"
    concurrent = [
        (a, b)
        for a, b in combinations(records, 2)
        if a["start"] < b["end"] and b["start"] < a["end"]
    ]
    assert concurrent, "no two jobs ever ran at once: the test exercised no sharing"


def test_jobs_get_their_own_gpus_under_the_resource_limit(tmp_path):
    records = _run_stub(tmp_path, "--resources", "gpu=4")
    _check_allocation(records)
    # Snakemake's limit alone keeps the sum within the node: a job finds its devices free at once
    waits = {r["job"]: round(r["start"] - r["asked"], 2) for r in records}
    assert max(waits.values()) < 0.1, waits


def test_the_allocator_alone_keeps_jobs_apart(tmp_path):
    records = _run_stub(tmp_path)  # no --resources gpu: Snakemake starts all six together
    _check_allocation(records)
    waits = {r["job"]: round(r["start"] - r["asked"], 2) for r in records}
    assert max(waits.values()) >= 0.5, waits  # some job waited for another's devices


# ------------------------------------------------------------------------------ the real workflow
GPU_KINDS = {  # every rule that loads a model: the kind of job (grpo_repro.gpus.job_gpus)
    "train_reference": "sft",
    "replicate_reference": "sft",
    "train_grpo": "train",
    "replicate_train": "train",
    "fixed_point_train": "train",
    "evaluate_reference": "eval",
    "evaluate_run": "eval",
    "replicate_evaluate_ref": "eval",
    "replicate_evaluate": "eval",
    "fixed_point_evaluate_ref": "eval",
    "fixed_point_evaluate": "eval",
    "fixed_point_evaluate_long": "eval",
    "fixed_point_evaluate_compact": "eval",
    "fixed_point_kl": "kl",
    "zero_reference": "eval",
    "zero_measure": "eval",
    "zero_control": "eval",  # one training process (grpo_repro.zero.CONTROL_TRAIN)
}
JOB_BLOCK = re.compile(r"^(?:local)?rule (\w+):\n((?:[ \t]+.*\n)+)", re.M)


def dry_run_resources(*args: str) -> dict[str, list[dict[str, str]]]:
    """{rule: [each job's resources as printed by `snakemake -n`]}: a dry run prints every job as
    a block "rule NAME:" whose line "resources: k=v, k=v" holds the job's evaluated resources."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}  # a dry run needs no hub (common.smk on_start)
    res = snakemake(["-n", "--forceall", *args], ROOT, env, timeout=300)
    assert res.returncode == 0, res.log
    jobs: dict[str, list[dict[str, str]]] = {}
    for rule, body in JOB_BLOCK.findall(res.stdout):
        line = re.search(r"^\s+resources: (.*)$", body, re.M)
        pairs = line.group(1).split(", ") if line else []
        jobs.setdefault(rule, []).append(dict(p.split("=", 1) for p in pairs))
    assert jobs, res.stdout[-2000:]
    return jobs


def _paper_train(overlay: dict) -> dict:
    base = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["train"]
    paper = yaml.safe_load((ROOT / "config" / "paper.yaml").read_text())["train"]
    return {**base, **paper, **overlay}


@pytest.mark.parametrize("overlay", [{}, {"vllm_mode": "colocate"}], ids=["paper", "colocate"])
def test_paper_gpu_jobs_declare_their_gpus(tmp_path, overlay):
    extra = tmp_path / "overlay.yaml"
    extra.write_text(yaml.safe_dump({"train": overlay} if overlay else {}))
    train = _paper_train(overlay)
    assert train["bf16"]  # the paper runs on GPUs
    jobs = dry_run_resources("all", "fixed_point", "--configfile", "config/paper.yaml", str(extra))
    assert {"train_grpo", "fixed_point_train", "evaluate_reference", "fixed_point_kl"} <= set(jobs)
    server = bool(train.get("use_vllm")) and train.get("vllm_mode") == "server"
    want_train = int(train["devices"]) + server  # the vLLM server's GPU is one more
    if overlay:
        assert want_train == 7  # the paper's 7 training processes, vLLM inside them
    for rule, printed in jobs.items():
        kind = GPU_KINDS.get(rule)
        want = want_train if kind == "train" else 1 if kind else 0
        for res in printed:
            assert int(res.get("gpu", 0)) == want, (rule, res)


def test_default_jobs_declare_no_gpu():
    jobs = dry_run_resources("all", "fixed_point", "replicates")
    assert set(GPU_KINDS) <= set(jobs), sorted(set(GPU_KINDS) - set(jobs))
    for rule, printed in jobs.items():
        for res in printed:
            assert int(res.get("gpu", 0)) == 0, (rule, res)
        if rule in GPU_KINDS:  # declared, as 0: the scripts read it
            assert all(res.get("gpu") == "0" for res in printed), (rule, printed)


def test_slurm_profile_keeps_each_gpu_job_on_one_node():
    """The SLURM profile (a dry run with it parses its YTE template): every GPU job of the paper
    graph runs on one node of the GPU partition, with the GPUs the rule declares (TRAIN_GPUS
    None: training follows the config)."""
    args = ["--workflow-profile", "workflow/profiles/slurm", "--executor", "slurm"]
    jobs = dry_run_resources("all", "fixed_point", *args, "--configfile", "config/paper.yaml")
    train = _paper_train({})
    server = bool(train.get("use_vllm")) and train.get("vllm_mode") == "server"
    for rule, printed in jobs.items():
        kind = GPU_KINDS.get(rule)
        for res in printed:
            if kind is None:
                assert int(res.get("gpu", 0)) == 0 and "nodes" not in res, (rule, res)
                continue
            assert res.get("nodes") == "1" and "slurm_partition" in res, (rule, res)
            want = int(train["devices"]) + server if kind == "train" else 1
            assert int(res.get("gpu", 0)) == want, (rule, res)
