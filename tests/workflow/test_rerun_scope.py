"""Rerun scope follows the concept (stages data, train, report): a variant's record is a file of its own
(grpo_repro/variant_records/<name>.yaml), so on a workflow whose outputs are up to date, adding one
record schedules only that variant's runs and what covers every variant (the report, the theory
checks), and editing one reruns only its own runs, never another variant's training or evaluation,
pi_ref or the data; a variant's label and colour live in grpo_repro.style, so a recolour reruns plot
jobs only; a data source is a module of its own, read only by a configuration that uses it."""

from __future__ import annotations

import contextlib
import os
import re
import shutil

import pytest
import yaml

from tests.helpers import snakemake
from tests.workflow.conftest import REPORT_RULES, _jobs

RECORDS = "workflow/src/grpo_repro/variant_records"
NEVER = {"data_prepare", "train_reference", "evaluate_reference"}
RUNS = {"train_grpo", "evaluate_run"}
# what covers every variant record: the report, and the theory checks (each record's claims)
EVERY = {"theory_derivations"}
# the jobs that only draw: plots, and the landing page that shows them
PRESENTATION = re.compile(r"^(report_plot_\w+|figures_plot_\w+|fixed_point_plot|report_landing)$")


def _covers_every_variant(rule: str) -> bool:
    return bool(REPORT_RULES.match(rule)) or rule in EVERY


def _pending(tmp, *config_files) -> dict:
    """{rule: jobs} a dry run of report_all schedules (mtime and code triggers, as the other
    regeneration tests: the fabricated upstream outputs have no Snakemake metadata)."""
    args = ["report_all", "-n", "--rerun-triggers", "mtime", "code", "--configfile", *config_files]
    env = {**os.environ, "PYTHONPATH": str(tmp / "workflow" / "src"), "HF_HUB_OFFLINE": "1"}
    res = snakemake(args, tmp, env)
    assert res.returncode == 0, res.log[-4000:]
    return res.log


@contextlib.contextmanager
def _restored(*paths):
    """Put each file back as it was (content and modification time), or remove it if it was new."""
    saved = {p: (p.read_bytes(), p.stat()) if p.exists() else None for p in paths}
    try:
        yield
    finally:
        for p, old in saved.items():
            if old is None:
                p.unlink(missing_ok=True)
            else:
                p.write_bytes(old[0])
                os.utime(p, ns=(old[1].st_atime_ns, old[1].st_mtime_ns))


def _scheduled_runs(log: str) -> set:
    """The {run} wildcards of the train_grpo and evaluate_run jobs a dry run lists."""
    runs, rule = set(), None
    for line in log.splitlines():
        line = line.strip()
        if line.startswith("rule "):
            rule = line.removeprefix("rule ").rstrip(":")
        elif line.startswith("wildcards:") and rule in ("train_grpo", "evaluate_run"):
            pairs = line.removeprefix("wildcards:").split(",")
            runs.add(dict(p.strip().split("=", 1) for p in pairs)["run"])
    return runs


def test_a_new_variant_record_schedules_only_its_runs_and_the_report(report_workflow):
    tmp = report_workflow
    record, overlay = tmp / RECORDS / "my_grpo.yaml", tmp / "config" / "my_variant.yaml"
    assert _jobs(_pending(tmp, "config/test.yaml")) == set()
    with _restored(record, overlay):  # the record alone: the schema reads the registry
        shutil.copy(tmp / RECORDS / "grpo.yaml", record)  # GRPO under another name
        text = record.read_text().replace("order: 1", "order: 7")
        record.write_text(text)
        cfg = yaml.safe_load((tmp / "config/test.yaml").read_text())
        overlay.write_text(yaml.safe_dump({"variants": [*cfg["variants"], "my_grpo"]}))
        log = _pending(tmp, "config/test.yaml", "config/my_variant.yaml")
    jobs = _jobs(log) - {"report_all"}
    seeds = cfg["train"]["seeds"]
    assert _scheduled_runs(log) == {f"my_grpo/seed_{s}" for s in seeds}
    assert jobs >= RUNS and not jobs & NEVER
    assert all(_covers_every_variant(r) for r in jobs - RUNS), jobs
    assert _jobs(_pending(tmp, "config/test.yaml")) == set()  # the record gone: nothing to do


@pytest.mark.slow  # a second dry run of the same mechanism (about 20 s)
def test_editing_a_variant_record_reruns_its_runs_only(report_workflow):
    tmp = report_workflow
    record = tmp / RECORDS / "dr_grpo.yaml"
    with _restored(record):
        record.write_text(record.read_text() + "# edited\n")
        log = _pending(tmp, "config/test.yaml")
    jobs = _jobs(log) - {"report_all"}
    cfg = yaml.safe_load((tmp / "config/test.yaml").read_text())
    assert _scheduled_runs(log) == {f"dr_grpo/seed_{s}" for s in cfg["train"]["seeds"]}
    assert jobs >= RUNS and not jobs & NEVER
    assert all(_covers_every_variant(r) for r in jobs - RUNS), jobs


@pytest.mark.slow  # a third dry run of the same mechanism (about 20 s)
def test_a_record_no_run_reads_reruns_no_training(report_workflow):
    """mirror is not among the configured variants: editing its record reruns what covers every
    variant (the report's overlay and summary draw every record), no training or evaluation."""
    tmp = report_workflow
    record = tmp / RECORDS / "mirror.yaml"
    with _restored(record):
        record.write_text(record.read_text() + "# edited\n")
        jobs = _jobs(_pending(tmp, "config/test.yaml")) - {"report_all"}
    assert jobs and all(_covers_every_variant(r) for r in jobs), jobs


def test_a_recolour_reruns_plot_jobs_only(report_workflow):
    """A variant's colour lives in grpo_repro.style, which only plots read (its record says what
    it does, not how it looks): recolouring dr_grpo reruns the plots and the landing page that
    shows them, never its training, evaluation or a table of the report."""
    tmp = report_workflow
    style = tmp / "workflow/src/grpo_repro/style.py"
    with _restored(style):
        text = style.read_text()
        assert '"#2ca02c"' in text
        style.write_text(text.replace('"#2ca02c"', '"#000000"'))
        jobs = _jobs(_pending(tmp, "config/test.yaml")) - {"report_all"}
    assert jobs and all(PRESENTATION.match(r) for r in jobs), jobs


def test_a_data_source_record_reruns_only_the_configurations_that_read_it(report_workflow):
    """The default configuration reads the organism: editing GSM8K's source module reruns
    nothing; editing the organism's reruns data preparation (and what its data feed)."""
    tmp = report_workflow
    folder = tmp / "workflow/src/grpo_repro/data/source_records"
    with _restored(folder / "gsm8k.py"):
        (folder / "gsm8k.py").write_text((folder / "gsm8k.py").read_text() + "\n# edited\n")
        assert _jobs(_pending(tmp, "config/test.yaml")) == set()
    with _restored(folder / "organism.py"):
        (folder / "organism.py").write_text((folder / "organism.py").read_text() + "\n# edited\n")
        assert "data_prepare" in _jobs(_pending(tmp, "config/test.yaml"))
