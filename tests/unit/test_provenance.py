"""A results tree whose PROVENANCE.json records another configuration, with no Snakemake record of
it (grpo_repro.provenance.untracked_changes; common.smk's on_start stops on it)."""

import copy
import json
import os

from grpo_repro import io
from grpo_repro.provenance import config_changes, untracked_changes
from tests.helpers import copy_workflow, snakemake


def _tree(tmp_path, config):
    (tmp_path / "results" / "theory").mkdir(parents=True)
    io.write_json(tmp_path / "results" / "theory" / "PROVENANCE.json", {"config": config})
    return tmp_path / "results"


def test_config_changes_name_each_key():
    assert config_changes({"a": {"b": 1, "c": [1]}}, {"a": {"b": 2, "c": [1]}}) == ["a.b: 1 -> 2"]
    assert config_changes({"a": 1}, {"a": 1, "d": 0}) == ["d: <absent> -> 0"]


def test_a_copied_tree_of_another_configuration_is_named(tmp_path, default_config):
    old = copy.deepcopy(default_config)
    old["train"]["beta"] = 0.5
    results = _tree(tmp_path, old)
    msg = untracked_changes(results, default_config, tmp_path / ".snakemake" / "metadata")
    assert msg and "results/theory" in msg and "train.beta: 0.5 -> 0.1" in msg, msg


def test_nothing_to_say(tmp_path, default_config):
    """Same configuration, a speed-only change, or Snakemake's own records: no message."""
    meta = tmp_path / ".snakemake" / "metadata"
    results = _tree(tmp_path, default_config)
    assert untracked_changes(results, default_config, meta) is None
    fast = copy.deepcopy(default_config)
    fast["eval"]["batch_prompts"] = 999  # speed only (config.SPEED_ONLY)
    assert untracked_changes(results, fast, meta) is None
    other = copy.deepcopy(default_config)
    other["train"]["beta"] = 0.5
    meta.mkdir(parents=True)
    (meta / "record").write_text("{}")
    assert untracked_changes(results, other, meta) is None


def test_the_run_stops_at_start_naming_the_keys(tmp_path, default_config):
    work = copy_workflow(tmp_path / "wf")
    old = json.loads(json.dumps(default_config))
    old["train"]["beta"] = 0.5
    _tree(work, old)
    res = snakemake(["-c1", "results/theory/derivations.json"], work, dict(os.environ))
    assert res.returncode != 0
    assert "train.beta: 0.5 -> 0.1" in res.log and "no record of it" in res.log, res.log
    assert not (work / "results" / "theory" / "derivations.json").exists()
