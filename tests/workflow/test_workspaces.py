"""Several configurations side by side: `snakemake --directory DIR` gives a run its own results/,
logs, benchmarks and .snakemake/ (the workflow's default configuration and its files are found from
the Snakefile, grpo_repro's paths relative to the working directory); two configurations run one
after the other keep both trees."""

import hashlib
import json
import os

from tests.helpers import copy_workflow, snakemake

DEFAULT_FAST = ["results/theory/derivations.json", "results/figures/fig1_weights.csv"]


def _digest(root):
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_two_configurations_in_two_directories_keep_both_trees(tmp_path):
    wf = copy_workflow(tmp_path / "wf")
    default, smoke = tmp_path / "runs" / "default", tmp_path / "runs" / "smoke"
    env = dict(os.environ)
    res = snakemake(["-c2", "-d", str(default), *DEFAULT_FAST], wf, env)
    assert res.returncode == 0, res.log
    before = _digest(default / "results")
    assert "theory/derivations.json" in before and "figures/fig1_weights.csv" in before
    assert (default / "results" / "logs" / "theory").is_dir()
    smoke_args = ["--configfile", "config/paper.yaml", "config/smoke.yaml"]
    res = snakemake(["-c2", "-d", str(smoke), "data_prepare", *smoke_args], wf, env)
    assert res.returncode == 0, res.log
    assert _digest(default / "results") == before, "the second run touched the first's tree"
    stats = json.loads((smoke / "results" / "data" / "splits.json").read_text())
    assert stats["test"]["n"] == 16, stats  # the smoke run's data (GSM8K excerpt, n_test 16)
    assert not (default / "results" / "data").exists()
    assert not (wf / "results").exists() and not (wf / ".snakemake").exists()
