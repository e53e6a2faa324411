"""The rule graph: dry runs of the default and paper configurations build the whole DAG; every rule
declares the import closure of its code; scripts read only their rule."""

import functools
import json
import re
import subprocess
import sys
from collections import Counter
from modulefinder import ModuleFinder
from pathlib import Path

import pytest
import yaml

from grpo_repro import config as cfg
from grpo_repro import plan
from grpo_repro.variants import names
from tests.helpers import ROOT, job_counts, snakemake

PAPER_GRAPHS = [["config/paper.yaml"], ["config/paper.yaml", "config/paper_studies.yaml"]]
GSM8K = {"train": 7473, "test": 1319}  # openai/gsm8k's published split sizes (a dry run's)

#: the default configuration's variants (config/config.yaml)
DEFAULT_VARIANTS = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["variants"]


@functools.cache  # one dry run per set of arguments: the paper's graph is read by four tests
def dry_run(*args):
    res = snakemake(["-n", "--forceall", *args], ROOT, timeout=300)
    assert res.returncode == 0, res.log
    return res.stdout


def test_default_graph():
    counts = job_counts(dry_run())
    assert counts["theory_derivations"] == 1
    assert counts.get("train_grpo") == 4 * 3  # one job per variant and GRPO seed
    assert counts.get("evaluate_run") == 4 * 3 and counts["evaluate_reference"] == 1  # one per run
    assert counts["report_temperature"] == 1


def test_two_kl_graph():
    """variants: [two_kl] (Lemma 2, Thm 9): the schema accepts it (a trained record) and the
    graph has its train, evaluate and report jobs; narrowing `variants` is the only edit
    (replicates.variants null: the first of `variants`), the replicates target included."""
    counts = job_counts(dry_run("--config", "variants=[two_kl]"))
    assert counts.get("train_grpo") == 3 and counts.get("evaluate_run") == 3  # 3 GRPO seeds
    assert counts["report_temperature"] == 1 and counts["evaluate_reference"] == 1
    out = dry_run("replicates", "--config", "variants=[two_kl]")
    trained = set(re.findall(r"results/replicates/seed_\d+/train/(\w+)/seed_\d+/run\.json", out))
    assert trained == {"two_kl"}, trained


#: the rules whose jobs load a model (pi_ref, a checkpoint): each must hold a GPU in a GPU graph
MODEL_RULES = {
    "train_reference",
    "train_grpo",
    "evaluate_reference",
    "evaluate_run",
    "fixed_point_train",
    "fixed_point_evaluate_ref",
    "fixed_point_evaluate",
    "fixed_point_evaluate_compact",
    "fixed_point_evaluate_long",
    "fixed_point_kl",
}


def job_gpus(out: str) -> dict[str, set[int]]:
    """{rule: the `gpu` resources of its jobs} of a dry run's job list (0 where none is declared)."""
    found: dict[str, set[int]] = {}
    rule = None
    for line in out.splitlines():
        m = re.match(r"^(?:local)?rule (\w+):", line)
        if m:
            rule = m.group(1)
            found.setdefault(rule, set())
        m = re.search(r"resources: (.*)", line)
        if m and rule:
            gpu = re.search(r"\bgpu=(\d+)", m.group(1))
            found[rule].add(int(gpu.group(1)) if gpu else 0)
    return found


def test_paper_graph_is_the_papers_run_and_every_model_job_holds_a_gpu():
    """config/paper.yaml: the paper trained one run (grpo); no fixed-point study in its graph (the
    overlay config/paper_studies.yaml adds it and the other variants); every job that loads a
    model holds a GPU (8 for training: 7 training processes and the vLLM server)."""
    out = dry_run("--configfile", "config/paper.yaml")
    counts = job_counts(out)
    assert counts.get("train_grpo") == 1 and counts["evaluate_run"] == 1
    assert "train_reference" not in counts  # pi_ref is the hub model
    assert not [r for r in counts if r.startswith("fixed_point")], counts
    for files in (["config/paper.yaml"], ["config/paper.yaml", "config/paper_studies.yaml"]):
        gpus = job_gpus(dry_run("--configfile", *files))
        models = {r: g for r, g in gpus.items() if r in MODEL_RULES}
        assert models and all(0 not in g for g in models.values()), (files, models)
        assert gpus["train_grpo"] == {8}
    assert {"fixed_point_kl", "fixed_point_train"} <= set(models)  # the studies' overlay


def job_priorities(out: str) -> dict[str, set[int]]:
    """{rule: the priorities of its jobs} of a dry run's job list (0 where none is printed)."""
    found: dict[str, set[int]] = {}
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", out):
        m = re.match(r"(?:local)?rule (\w+):", block)
        if m:
            prio = re.search(r"^\s+priority: (-?\d+)", block, re.M)
            found.setdefault(m.group(1), set()).add(int(prio.group(1)) if prio else 0)
    return found


@pytest.mark.parametrize("files", PAPER_GRAPHS, ids=["paper", "paper+studies"])
def test_the_plan_has_the_dry_runs_jobs_and_puts_training_first(files):
    """python -m grpo_repro.plan prices the jobs the workflow schedules, rule for rule, for the
    paper's graph alone and with its studies; on the dry run every training job (every GPU of the
    node) outranks every 1-GPU job, so Snakemake starts it first, and so does the plan's node."""
    out = dry_run("--configfile", *files)
    config = cfg.load(*[ROOT / f for f in files])
    throughput = json.loads(plan.THROUGHPUT.read_text())
    jobs = plan.jobs(config, throughput, GSM8K)
    counts = {r: n for r, n in job_counts(out).items() if r != "total"}
    assert Counter(j.rule for j in jobs) == Counter(counts), files
    gpus, prio = job_gpus(out), job_priorities(out)
    training = {r for r, g in gpus.items() if max(g) > 1}
    single = {r for r, g in gpus.items() if g == {1}}
    assert training >= {"train_grpo"} and single >= {"evaluate_reference", "zero_control"}
    assert min(p for r in training for p in prio[r]) > max(p for r in single for p in prio[r])
    for j in jobs:  # the plan's GPUs and priorities are the rules'
        assert {j.gpus} == gpus[j.rule] or not j.gpus, j.key
        assert j.priority in prio[j.rule] or not j.gpus, j.key
    node = plan.schedule(jobs)
    first = min(node.start, key=node.start.get)
    assert next(j for j in jobs if j.key == first).gpus == plan.NODE_GPUS


def test_rehearsal_graph_is_the_papers_on_the_cpu():
    """The rehearsal (config/rehearsal.yaml over config/paper.yaml) schedules the paper graph's
    jobs, rule for rule, none of them asking for a GPU."""
    paper = job_counts(dry_run("--configfile", "config/paper.yaml"))
    out = dry_run("--configfile", "config/paper.yaml", "config/rehearsal.yaml")
    assert job_counts(out) == paper
    assert all(g == {0} for g in job_gpus(out).values())


# ------------------------------------------------------------------------------ code dependencies
SRC = ROOT / "workflow" / "src"
RULE_DUMP = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import (ConfigSettings, OutputSettings, ResourceSettings,
                                      StorageSettings, WorkflowSettings)
with SnakemakeApi(OutputSettings()) as api:
    wf = api.workflow(resource_settings=ResourceSettings(), config_settings=ConfigSettings(),
                      storage_settings=StorageSettings(), workflow_settings=WorkflowSettings(),
                      snakefile=Path("Snakefile"), workdir=Path("."))._workflow
    def first_run(r):  # the first run name a rule's {run} wildcard matches, if it has one
        runs = r.wildcard_constraints.get("run")
        return runs.split("|")[0].replace(chr(92), "") if runs else None  # unescaped
    def code(r):  # a function of the {run} wildcard: called with the first run it matches
        code = r.input.get("code", [])
        return list(code(type("W", (), {"run": first_run(r)})) if callable(code) else code)
    def variant(run):  # the run's variant, from the run table that holds it
        found = [*wf.globals.values(), *vars(wf.globals["P"]).values()]  # the plan's tables too
        tables = [t for t in found if isinstance(t, dict) and run in t]
        return getattr(tables[0][run], "variant", None) if run and tables else None
    rules = [{"name": r.name, "script": r.script, "code": code(r),
              "variant": variant(first_run(r)), "func": dict(r.params.items()).get("func"),
              "doc": r.docstring}
             for r in wf.rules]
print("RULES=" + json.dumps(rules))
"""


def workflow_rules() -> list[dict]:
    res = subprocess.run(
        [sys.executable, "-c", RULE_DUMP],
        cwd=ROOT,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=300,
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    line = next(x for x in res.stdout.splitlines() if x.startswith("RULES="))
    return json.loads(line[len("RULES=") :])


def modulefinder_closure(paths) -> set[str]:
    """Package files `paths` import, found by the standard library's ModuleFinder (bytecode scan,
    function-level imports included): an implementation independent of grpo_repro.codedeps."""
    finder = ModuleFinder(path=[str(SRC)])
    for p in paths:
        finder.run_script(str(p))
    return {
        str(Path(m.__file__).resolve().relative_to(ROOT))
        for m in finder.modules.values()
        if m.__file__ and Path(m.__file__).resolve().is_relative_to(SRC.resolve())
    }


SOURCES, VARIANTS = "workflow/src/grpo_repro/data/sources.py", "workflow/src/grpo_repro/variants.py"
# the variant records a rule reads, where not every record: a training run its own variant's,
# pi_ref's jobs and the evaluations none
RUNS = ("train_grpo", "fixed_point_train", "replicate_train")
READ_NONE = {
    name: set()
    for name in (
        "train_reference",
        "replicate_reference",
        "evaluate_reference",
        "evaluate_run",
        "fixed_point_evaluate",
        "fixed_point_evaluate_ref",
        "fixed_point_evaluate_long",
        "fixed_point_evaluate_compact",
        "replicate_evaluate",
        "replicate_evaluate_ref",
        "zero_reference",
        "zero_measure",
    )
}


def test_every_rule_declares_the_import_closure_of_its_code():
    """A rule's `code` inputs are exactly the package files its script (and the registry module it
    loads by name) imports, so an edit to any of them reruns the rule and no other edit does."""
    rules = [r for r in workflow_rules() if r["script"]]
    assert len(rules) >= 25
    for r in rules:
        script = ROOT / "workflow" / "rules" / r["script"]
        paths = [script]
        if r["func"]:
            package = "figures" if r["name"].startswith("figures_") else "report"
            paths.append(SRC / "grpo_repro" / package / f"{r['func'].split(':')[0]}.py")
        expected = modulefinder_closure(paths)
        assert expected, r["name"]
        if SOURCES in expected:  # the configured source's module (loaded by name)
            expected |= modulefinder_closure([SRC / "grpo_repro/data/source_records/organism.py"])
        code = {c for c in r["code"] if c.endswith(".py")}
        assert code == expected, (r["name"], code ^ expected)
        records = {Path(c).stem for c in r["code"] if c.endswith(".yaml")}
        assert not records or VARIANTS in expected, r["name"]  # records only where read
        if VARIANTS in expected:
            want = {r["variant"]} if r["name"] in RUNS else READ_NONE.get(r["name"])
            if r["name"] == "zero_control":  # the first variant's run, on the zeros alone
                want = {DEFAULT_VARIANTS[0]}
            assert records == (set(names()) if want is None else want), (r["name"], records)


def test_every_job_rule_says_what_it_makes():
    """`snakemake --list-rules` describes every rule that runs a script (the figure and report plot
    rules generated from their registries too: the entry's doc)."""
    bare = [r["name"] for r in workflow_rules() if r["script"] and not (r["doc"] or "").strip()]
    assert not bare, bare


def test_plot_rules_do_not_depend_on_compute_code():
    """Restyling reruns plots only: no plot rule's code includes a compute module, and no compute
    rule's code includes plotting code."""
    for r in workflow_rules():
        code = {Path(c).name for c in r["code"]}
        if "_plot" in r["name"]:
            assert not code & {
                "compute.py",
                "compute_oracle.py",
                "amplification.py",
                "overlay.py",
            }, r
        elif r["name"].startswith(("figures_data", "report_")) or r["name"] == "train_grpo":
            assert not code & {"style.py", "plots.py", "plot_paper.py", "plot_maps.py"}, r


def test_scripts_read_only_their_rule():
    """Scripts take settings from their rule's params/input/output, never snakemake.config (the
    params are the rerun trigger: a setting read behind the rule's back would rerun nothing)."""
    for script in sorted((ROOT / "workflow" / "scripts").glob("*.py")):
        text = script.read_text()
        assert not re.search(r"\b(sm|snakemake)\.config\b", text), script.name
        assert "io.log_to(sm.log[0], job=sm)" in text, f"{script.name}: one logging line, io.log_to"


#: what common.smk gives every rule file (the plan and two helpers), what the Snakefile reads, and
#: the workflow's folder the Snakefile finds (ROOT: its own, also where the workflow is a module)
SHARED = {
    "ROOT",
    "P",
    "code",
    "settings",
    "all_targets",
    "on_start",
    "on_success",
    "check_copied_tree",
}


def _top_level_names(text: str) -> set[str]:
    """The globals a Snakemake file defines: assignments, functions, classes, imports, loops."""
    names = set(re.findall(r"^(?:def |class )(\w+)", text, re.M))
    names |= set(re.findall(r"^(\w+)\s*=", text, re.M))
    names |= set(re.findall(r"^for (\w+) in", text, re.M))
    for line in re.findall(r"^(?:from \S+ )?import (.+)$", text, re.M):
        names |= {part.split(" as ")[-1].strip(" ()").split(".")[0] for part in line.split(",")}
    return names


def test_rule_files_share_only_the_plan_and_the_helpers():
    """A rule file reads the plan P and common.smk's helpers and imports the rest itself: no
    global one rule file defines is read by another (Snakemake's includes share one namespace)."""
    files = [ROOT / "Snakefile", *sorted((ROOT / "workflow" / "rules").glob("*.smk"))]
    # each file's code less its docstrings, comments, strings and import lines
    strip = r'"""[\s\S]*?"""|#.*|"[^"\n]*"|^(?:from|import) .*$'
    code = {f: re.sub(strip, "", f.read_text(), flags=re.M) for f in files}
    defined = {f: _top_level_names(f.read_text()) for f in files}
    shared = {
        (name, g.name)
        for f in files
        for name in defined[f]
        for g in files
        if g != f
        and name not in defined[g]
        and re.search(rf"(?<![\w.]){name}\b(?!\s*=[^=])", code[g])  # a read, not a keyword
    }
    assert {name for name, _ in shared} <= SHARED, sorted(shared)
