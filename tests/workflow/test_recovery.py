"""Slow check (pytest -m slow): nothing finished is lost, nothing stale is used.

One finished run of the rehearsal (config/rehearsal.yaml over config/paper.yaml: the paper's code
path at toy size, pi_ref from the rehearsal's hub cache) on the shipped 64-problem GSM8K excerpt as
local files (local.yaml: the smallest whole graph whose data comes from files), up to the report's
tables (STAGES: every output of the data, train and evaluate stages feeds them; the theory and
figure stages and the report's plots are not what these edits concern), then:
  - one bad data edit (data.n_test: 100 > the 64 problems of the test file), a non-finite number, an
    ambiguous YAML value and a model shape transformers refuses each stop the workflow when it
    loads, naming the key (or value), file and line; results/ is untouched;
  - the edit reverted: "Nothing to be done" (no training, no evaluation reruns);
  - a speed-only setting changed (eval.batch_prompts): nothing to be done;
  - a GRPO seed added: only the new seed's runs are scheduled;
  - a gold answer edited in the local GSM8K file: data_prepare is scheduled again.
(The fault-tolerance check's organism configuration generates its data, so no data size can
exceed a file there.)
"""

import json

import pytest
import yaml

from grpo_repro.config import load
from tests.helpers import copy_workflow, job_counts, rehearsal, snakemake

RUN = [*rehearsal.FILES, "config/local.yaml"]  # the rehearsal on local GSM8K files
# the report's three table rules: every evaluation table, every temperature's table, every training log
STAGES = ["report_tables", "report_temperature", "report_training"]
LOCAL = "data:\n  train_path: workflow/resources/gsm8k/train.jsonl\n  test_path: workflow/resources/gsm8k/test.jsonl\n"


def _run(wd, hub, *args, timeout=3000):
    env = rehearsal.env(hub, PYTHONPATH=str(wd / "workflow" / "src"))
    return snakemake([*args, *STAGES, "--configfile", *RUN, "config/edit.yaml"], wd, env, timeout)


def _stamps(wd):
    return {
        str(p.relative_to(wd)): p.stat().st_mtime_ns
        for sub in ("results/data", "results/train", "results/evaluate")
        for p in sorted((wd / sub).rglob("*"))
        if p.is_file()
    }


@pytest.mark.slow
def test_bad_data_edit_then_revert_reruns_nothing(tmp_path, hub_cache):
    wd = copy_workflow(tmp_path / "wf")
    (wd / "config" / "local.yaml").write_text(LOCAL)
    edit = wd / "config" / "edit.yaml"
    edit.write_text("{}\n")
    first = _run(wd, hub_cache, "-c2")
    assert first.returncode == 0, first.log[-4000:]
    before = _stamps(wd)
    assert any(k.startswith("results/train/") and k.endswith("run.json") for k in before)

    edit.write_text("data:\n  n_test: 100\n")
    bad = _run(wd, hub_cache, "-c2")
    assert bad.returncode != 0
    assert "'data.n_test' (" in bad.log and "edit.yaml:2)" in bad.log, bad.log[-3000:]
    assert "holds 64" in bad.log
    assert _stamps(wd) == before  # nothing deleted, nothing rewritten

    # the other classes refused at load: a non-finite number, a YAML value read two ways, a model
    # shape transformers refuses; each stops before any job, nothing rewritten
    for bad_edit, said in (
        ("train:\n  beta: .inf\n", "not a finite number"),
        ("train:\n  bf16: off\n", "reads as a boolean in YAML 1.1"),
        ("organism:\n  hidden: 66\n", "whole, even head size"),
    ):
        edit.write_text(bad_edit)
        bad = _run(wd, hub_cache, "-c2")
        assert bad.returncode != 0 and said in bad.log and "edit.yaml:" in bad.log, bad.log[-3000:]
        assert _stamps(wd) == before

    edit.write_text("{}\n")
    again = _run(wd, hub_cache, "-n")
    assert again.returncode == 0 and "Nothing to be done" in again.log, again.log[-3000:]

    edit.write_text("eval:\n  batch_prompts: 3\n")
    speed = _run(wd, hub_cache, "-n")
    assert speed.returncode == 0 and "Nothing to be done" in speed.log, speed.log[-3000:]

    cfg = load(*(wd / f for f in RUN))
    edit.write_text(yaml.safe_dump({"train": {"seeds": [*cfg["train"]["seeds"], 7]}}))
    more = _run(wd, hub_cache, "-n")
    assert more.returncode == 0, more.log[-3000:]
    assert job_counts(more.log)["train_grpo"] == len(cfg["variants"]), more.log[-3000:]
    assert "train_reference" not in job_counts(more.log)

    edit.write_text("{}\n")  # a gold answer edited in the local GSM8K file: the prompts are redone
    data = wd / cfg["data"]["train_path"]
    first_line, rest = data.read_text().split("\n", 1)
    record = json.loads(first_line)
    record["answer"] = record["answer"].rsplit("####", 1)[0] + "#### 123456"
    data.write_text(json.dumps(record) + "\n" + rest)
    stale = _run(wd, hub_cache, "-n")
    assert stale.returncode == 0 and job_counts(stale.log).get("data_prepare") == 1, stale.log[
        -3000:
    ]
