"""Configuration checks, the run's plan and the helpers every rule file uses.

The configuration is checked once (grpo_repro.config.check: schema, renamed keys, cross-field rules;
errors name key, file and line: one schema pass, config/config.yaml holding every key's value) and the
data against it, before any job is scheduled. `P` (grpo_repro.workflow_plan.Plan) holds every name
the rule files share (paths, run tables, checkpoint steps, entries). Each rule's code inputs are
derived (`code()`: the import closure of its script in the package), never listed by hand; each GPU
rule's `gpu` resource comes from grpo_repro.gpus.job_gpus (0 on the CPU; a local run on a GPU node
limits the jobs' sum with --resources gpu=N); `settings()` passes whole configuration sections.
"""

import functools
import os
import time

from snakemake.exceptions import WorkflowError

from grpo_repro import config as cfg
from grpo_repro import hub, prefetch
from grpo_repro.codedeps import closure, put_on_pythonpath
from grpo_repro.data.sets import check_sources
from grpo_repro.data.sources import record_module
from grpo_repro.data.sizes import check_sizes
from grpo_repro.io import compared_params
from grpo_repro.variants import names as variant_names
from grpo_repro.variants import record_file as variant_record
from grpo_repro.workflow_plan import Plan


def here(path):
    """A path of the workflow's own files (scripts, package, resources), relative to the working
    directory: the same as `path` in the checkout, and found from a run's own --directory."""
    return os.path.relpath(os.path.join(ROOT, path))


put_on_pythonpath(os.path.join(ROOT, "workflow", "src"))  # jobs import this checkout
CONFIG_FILES = cfg.precedence(workflow.configfiles)  # the default file first, then --configfile's
for key in ("train_path", "test_path"):  # a relative data path: the working directory's, else
    path = config["data"].get(key)  # the checkout's (the shipped excerpt under --directory)
    if path and not os.path.isabs(path) and not os.path.exists(path):
        config["data"][key] = here(path) if os.path.exists(here(path)) else path
try:
    cfg.check(config, CONFIG_FILES)  # the schema's one pass (its messages name key, file and line)
    # every process of the run (each job's too) reads the hub's files from the cache only
    hub.use_cache(config)
    # local data and model exist, the data sizes fit the data (the hub's files in the cache:
    # checked by on_start, which Snakemake never calls in a dry run)
    check_sources(config)
    DATA_SIZES = check_sizes(config, CONFIG_FILES, check_hub=False)
except ValueError as err:  # ConfigError is a ValueError
    raise WorkflowError(str(err)) from None

P = Plan(config, DATA_SIZES)  # the names every rule file reads (grpo_repro.workflow_plan)
RUN_STARTED = []  # when this invocation started its jobs (on_start)
METADATA = ".snakemake/metadata"  # Snakemake's records: only whether it has any (check_copied_tree)


wildcard_constraints:
    split="|".join(P.eval_splits),
    step=r"\d+",


def code(script, *modules, variants=None):
    """The package files a rule's script (under workflow/scripts/) imports, directly or not, plus
    the closure of `modules` (dotted names it loads by name): the rule's code inputs. A job that
    imports the variant registry also reads variant records, one file each
    (grpo_repro.variants.record_file): `variants` names those it reads, () none (pi_ref's jobs);
    None, every record (a job that covers every variant: theory, figures, report). So adding or
    editing one record reruns its runs and what covers every variant, nothing else. A job that
    imports the data source registry reads the configured source's module only
    (grpo_repro.data.sources.record_module), so editing another source's reruns nothing."""
    files = list(package_files(script, *modules))
    if here("workflow/src/grpo_repro/variants.py") in files:
        chosen = variant_names() if variants is None else variants
        files += [os.path.relpath(variant_record(v)) for v in chosen]
    return files


@functools.cache
def package_files(script, *modules):
    """code()'s package files, computed once per script (a run's rule asks once per job)."""
    src = here("workflow/src")
    files = closure([here(f"workflow/scripts/{script}"), *modules], src)
    if here("workflow/src/grpo_repro/data/sources.py") in files:
        files = sorted({*files, *closure([record_module(config["data"]["source"])], src)})
    return tuple(files)


def settings(*sections):
    """The configuration sections a job reads, as its params (a change reruns only that job)."""
    return {k: config[k] for k in sections}


def all_targets():
    """Every final artifact of the graph (each stage's targets: its rule file)."""
    return (
        list(rules.theory_derivations.output)
        + P.figures_targets()
        + list(rules.data_prepare.output)
        + P.train_targets()
        + P.evaluate_targets()
        + list(rules.report_all.input)
        + P.fixed_point_targets()  # the compact study; the others are named targets
        # the zero-success study: its page, data and figure
        + (list(rules.zero_summary.output) + list(rules.zero_plot.output) if config["zero"] else [])
    )


def on_start():
    """When a run starts, before its first job (never in a dry run, never inside a cluster job):
    the hub's model and data in the local cache (grpo_repro.prefetch.missing) and their split
    sizes, vLLM installed for any executor; CUDA and bf16
    only when the jobs run on this machine. The executor is known here, not while the Snakefile
    loads: Snakemake sets it after parsing, so `workflow.local_exec` (True for `local`, False for
    `slurm`) tells a local run from a cluster's login node. The GPU rules' scripts check the device
    again on the node that runs them (grpo_repro.preflight)."""
    from grpo_repro.preflight import PreflightError

    RUN_STARTED.append(time.time())  # the jobs of this invocation: on_success's time table
    try:
        prefetch.check_at_start(
            config, local=workflow.local_exec and not workflow.touch, files=CONFIG_FILES
        )
        if prefetch.needs(config) and check_sizes(config, CONFIG_FILES) != DATA_SIZES:
            raise ValueError(f"the hub's split sizes differ from the assumed {DATA_SIZES}")
    except (PreflightError, ValueError) as err:
        raise WorkflowError(str(err)) from None


def on_success():
    """After a successful run: the provenance of the files jobs wrote since each stage's record
    (the stages no job touched keep theirs), then this run's stage times."""
    from grpo_repro.provenance import write_stage_provenance
    from grpo_repro.report.summary import stage_times

    write_stage_provenance(P.results, logs=P.logs)  # from the jobs' own records
    print(stage_times(P.bench, since=RUN_STARTED[0] if RUN_STARTED else None))


def current_params(rule_name, path):
    """The params the current configuration gives rule `rule_name` for its output `path`, as
    Snakemake records and compares them (grpo_repro.io.compared_params); None when the rule is
    gone or the path is none of its outputs."""
    from snakemake.iocontainers import InputFiles, OutputFiles

    try:
        maker = workflow.get_rule(rule_name)
        wildcards = maker.get_wildcards(path)
        params, _ = maker.expand_params(wildcards, InputFiles(), OutputFiles(), None)
    except Exception:  # the rule renamed or removed, the path no longer its output
        return None
    return compared_params(params)


def check_copied_tree():
    """A results tree copied from elsewhere (no .snakemake/metadata) whose files' provenance shows
    other settings: named, folder by folder, before anything runs, also when nothing would be
    scheduled (grpo_repro.provenance.stale_outputs, from the rules' own params)."""
    from grpo_repro.provenance import stale_outputs

    stale = stale_outputs(P.results, current_params, METADATA)
    if stale:
        raise WorkflowError(stale)
