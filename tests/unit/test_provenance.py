"""Provenance (grpo_repro.provenance): each file's record names the job that made it (its rule and
params, from the record the job wrote of itself) and is rewritten only by a job that touched it; a results tree
copied without Snakemake's records is checked file by file against the params the current
configuration gives their rules, naming only the folders a changed setting touches, also when
nothing would be scheduled."""

import os
import shutil

import pytest
import yaml

from grpo_repro import io
from grpo_repro.provenance import (
    config_changes,
    made_by,
    params_changes,
    stale_outputs,
)
from tests.helpers import copy_workflow, snakemake

THEORY = "results/theory/derivations.json"
FIG1 = "results/figures/fig1_weights.csv"


def test_config_changes_name_each_key():
    assert config_changes({"a": {"b": 1, "c": [1]}}, {"a": {"b": 2, "c": [1]}}) == ["a.b: 1 -> 2"]
    assert config_changes({"a": 1}, {"a": 1, "d": 0}) == ["d: <absent> -> 0"]


def test_params_changes_read_the_settings_from_the_params():
    old = ["1e-05", "{'n_random': 1000, 'tol': 1e-09, 'seed': 0}"]
    new = ["1e-05", "{'n_random': 2000, 'tol': 1e-09, 'seed': 0}"]
    assert params_changes(old, new) == ["n_random: 1000 -> 2000"]
    assert params_changes(["'ref'"], ["'grpo/seed_0'"]) == ["ref -> grpo/seed_0"]
    assert params_changes(old, None) == ["the rule is gone"]


def test_a_job_records_itself_when_it_ends_well(tmp_path):
    """io.log_to(log, job=sm): when the process ends without an uncaught exception, the job's
    record (rule, params as Snakemake compares them, outputs) lies beside its log; a job that
    fails leaves none; provenance reads the records by output path (job_records)."""
    import subprocess
    import sys

    from grpo_repro.provenance import job_records

    script = """
import sys
from types import SimpleNamespace
from grpo_repro import io
job = SimpleNamespace(rule="r", params=[1, {"a": 2}, lambda: 0], output=["results/x.csv"])
io.log_to(sys.argv[1], job=job)
if sys.argv[2] == "fail":
    raise RuntimeError("the job failed")
"""
    for name, how in (("ok", "pass"), ("bad", "fail")):
        log = tmp_path / "logs" / f"{name}.log"
        subprocess.run([sys.executable, "-c", script, str(log), how], check=how == "pass")
    assert not io.job_record_path(tmp_path / "logs" / "bad.log").exists()
    rec = io.read_json(io.job_record_path(tmp_path / "logs" / "ok.log"))
    assert rec["rule"] == "r" and rec["params"] == ["1", "{'a': 2}"]  # builtins, sorted reprs
    assert job_records(tmp_path / "logs") == {
        "results/x.csv": {"rule": "r", "params": ["1", "{'a': 2}"], "ended": rec["ended"]}
    }


def test_made_by_finds_the_job_of_a_directory_output_and_of_files_written_beside_outputs(
    tmp_path, monkeypatch
):
    """A file inside a directory output (pi_ref's model) has its directory's record; a file a job
    writes beside its declared output (a run's checkpoints beside run.json) has that output's,
    named by `output`; a file in a folder of the stage with no recorded file has none."""
    monkeypatch.chdir(tmp_path)
    records = {
        "results/train/ref/model": {"rule": "train_reference", "params": [], "ended": 1.0},
        "results/train/grpo/run.json": {"rule": "train_grpo", "params": [], "ended": 1.0},
    }
    stage = tmp_path / "results/train"
    for f in ("ref/model/config.json", "grpo/run.json", "grpo/checkpoints/step_4/w.bin", "x/y.txt"):
        (stage / f).parent.mkdir(parents=True, exist_ok=True)
        (stage / f).write_text("0")
    here = stage.relative_to(tmp_path)
    model = made_by(records, here / "ref/model/config.json", here)
    assert model["rule"] == "train_reference" and model["output"] == "results/train/ref/model"
    ckpt = made_by(records, here / "grpo/checkpoints/step_4/w.bin", here)
    assert ckpt["rule"] == "train_grpo" and ckpt["output"] == "results/train/grpo/run.json"
    assert made_by(records, here / "grpo/run.json", here)["rule"] == "train_grpo"
    assert "output" not in made_by(records, here / "grpo/run.json", here)
    assert made_by(records, here / "x/y.txt", here) is None


def _run(work, *args, config=None):
    extra = ["--configfile", "config/config.yaml", "mine.yaml"] if config else []
    if config:
        (work / "mine.yaml").write_text(yaml.safe_dump(config))
    env = {**os.environ, "PYTHONPATH": str(work / "workflow" / "src")}
    return snakemake(["-c1", *args, *extra], work, env, timeout=600)


@pytest.mark.slow  # two runs and two dry runs of the workflow (about 45 s)
def test_records_name_the_job_and_stay_with_the_files_it_made(tmp_path):
    """One run of the theory stage and Figure 1's data, then Figure 1 forced with a theory setting
    it does not read: the theory stage's record stays byte for byte (no job of that run touched
    it), the figures stage's names the job that remade its file. A copy of the tree without
    Snakemake's records, run with that theory setting: refused when the workflow loads (a dry
    run, nothing to schedule by time alone), naming results/theory and the setting, not the
    figures; run with the settings that made it: nothing to say."""
    work = copy_workflow(tmp_path / "wf")
    first = _run(work, THEORY, FIG1)
    assert first.returncode == 0, first.log[-3000:]
    theory = work / "results/theory/PROVENANCE.json"
    record = io.read_json(theory)["files"]["derivations.json"]
    assert record["rule"] == "theory_derivations" and "'n_random': 1000" in str(record["params"])
    before = theory.read_bytes()

    forced = _run(
        work, FIG1, "--forcerun", "figures_data_fig1", config={"theory": {"n_random": 2000}}
    )
    assert forced.returncode == 0, forced.log[-3000:]
    assert theory.read_bytes() == before  # not rewritten by a run that did not touch it
    fig = io.read_json(work / "results/figures/PROVENANCE.json")["files"]["fig1_weights.csv"]
    assert fig["rule"] == "figures_data_fig1" and fig["ended"] > record["ended"]

    copy = copy_workflow(tmp_path / "copy")
    shutil.copytree(work / "results", copy / "results")  # no .snakemake/metadata
    same = _run(copy, THEORY, FIG1, "-n")
    assert same.returncode == 0 and "made with other settings" not in same.log, same.log[-3000:]
    other = _run(copy, THEORY, FIG1, "-n", config={"theory": {"n_random": 2000}})
    assert other.returncode != 0, other.log[-3000:]
    assert "results/theory: 2 file(s) made with other settings: n_random: 1000 -> 2000" in other.log
    assert "results/figures" not in other.log.split("made with other settings", 1)[1]


def test_nothing_to_say_with_snakemake_s_own_records(tmp_path):
    results = tmp_path / "results"
    (results / "theory").mkdir(parents=True)
    entry = {"rule": "theory_derivations", "params": ["'a'"]}
    io.write_json(results / "theory/PROVENANCE.json", {"files": {"derivations.json": entry}})
    meta = tmp_path / ".snakemake" / "metadata"
    assert "1 file(s)" in stale_outputs(results, lambda rule, path: ["'b'"], meta)
    assert stale_outputs(results, lambda rule, path: ["'a'"], meta) is None
    meta.mkdir(parents=True)
    (meta / "record").write_text("{}")
    assert stale_outputs(results, lambda rule, path: ["'b'"], meta) is None
