"""Several configurations side by side: `snakemake --directory DIR` gives a run its own results/,
logs, benchmarks and .snakemake/ (the workflow's default configuration and its files are found from
the Snakefile, grpo_repro's paths relative to the working directory); two configurations run one
after the other keep both trees."""

import hashlib
import json

import pytest

from tests.helpers import copy_workflow, rehearsal, snakemake

DEFAULT_FAST = ["results/figures/fig1_weights.csv", "results/figures/fig1_weights.png"]


def _digest(root):
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.slow  # two workflow runs in two directories (about 25 s)
def test_two_configurations_in_two_directories_keep_both_trees(tmp_path, hub_cache):
    wf = copy_workflow(tmp_path / "wf")
    default, other = tmp_path / "runs" / "default", tmp_path / "runs" / "rehearsal"
    env = rehearsal.env(hub_cache)  # the rehearsal reads the hub from its cache
    res = snakemake(["-c2", "-d", str(default), *DEFAULT_FAST], wf, env)
    assert res.returncode == 0, res.log
    before = _digest(default / "results")
    assert "figures/fig1_weights.csv" in before and "figures/fig1_weights.png" in before
    assert (default / "results" / "logs" / "figures").is_dir()
    res = snakemake(["-c2", "-d", str(other), "data_prepare", *rehearsal.CONFIG_ARGS], wf, env)
    assert res.returncode == 0, res.log
    assert _digest(default / "results") == before, "the second run touched the first's tree"
    stats = json.loads((other / "results" / "data" / "splits.json").read_text())
    assert stats["test"]["n"] == 16, stats  # the rehearsal's data (GSM8K excerpt, n_test 16)
    assert not (default / "results" / "data").exists()
    assert not (wf / "results").exists() and not (wf / ".snakemake").exists()
