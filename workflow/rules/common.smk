"""Configuration validation and input/output helpers shared by every stage.

The configuration is checked (grpo_repro.config.check: schema + cross-field rules, errors naming
key, file and line) and then validated by Snakemake's validate() against the same JSON schema,
before any job is scheduled.
"""

import json
import os
import shlex
import sys

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from grpo_repro import config as cfg
from grpo_repro.data import check_sources, n_epoch_prompts
from grpo_repro.schedule import checkpoint_steps

try:
    cfg.check(config, workflow.configfiles)
except cfg.ConfigError as err:
    raise WorkflowError(str(err)) from None
validate(config, str(cfg.SCHEMA_PATH))
# a dry run only builds the graph: it does not need the hub model in the cache
DRYRUN = any(a in ("--dry-run", "--dryrun") or (a.startswith("-") and not a.startswith("--") and "n" in a)
             for a in sys.argv[1:])
try:
    check_sources(config, check_hub=not DRYRUN)  # local data and model exist (hub ids: offline runs)
except ValueError as err:
    raise WorkflowError(str(err)) from None

VARIANTS = list(config["variants"])
RESULTS = "results"
LOGS = "results/logs"
BENCH = "results/benchmarks"  # Snakemake benchmark files: wall time and memory of every job
ORGANISM = config["model"]["name_or_path"] is None
if ORGANISM:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing to download: avoid ~25 s of hub retries
REF_MODEL = f"{RESULTS}/models/ref" if ORGANISM else config["model"]["name_or_path"]
N_EPOCH_PROMPTS = n_epoch_prompts(config)
STEPS = checkpoint_steps(config["train"], N_EPOCH_PROMPTS)  # step 0 = pi_ref
# what GRPO training reads (the prompts and pi_ref are its inputs): other keys never retrain
TRAIN_CONFIG = {"seed": config["seed"], "train": config["train"],
                "data": {"answer_mode": config["data"]["answer_mode"]}}
TRAIN_SCRIPT = shlex.quote(os.path.join(workflow.basedir, "workflow", "scripts", "train_grpo.py"))


wildcard_constraints:
    variant="|".join(VARIANTS),
    split="test|train",
    step=r"\d+",


def all_targets():
    """Every final artifact of the graph (extended as stages land)."""
    targets = theory_targets() + figures_targets()
    targets += train_targets() + eval_targets() + plots_targets()
    return targets


def ref_model_input():
    """pi_ref as a job input: the organism's SFT run, or nothing for a hub id / external path."""
    return [f"{RESULTS}/models/ref_run.json"] if ORGANISM else []


def grpo_prompts_file():
    return f"{RESULTS}/data/train_pool.jsonl" if config["train"]["on_pool"] else f"{RESULTS}/data/train.jsonl"


def train_launcher():
    """plain python on one device; `accelerate launch` with one process per training GPU."""
    n = config["train"]["devices"]
    if n == 1:
        return shlex.quote(sys.executable)
    return f"{shlex.quote(sys.executable)} -m accelerate.commands.launch --num_processes {n}"


TRAIN_LAUNCHER = train_launcher()


def shell_quote(obj):
    return shlex.quote(json.dumps(obj))


def checkpoint_dir(variant, step):
    """Model evaluated at (variant, step); step 0 is pi_ref for every variant."""
    step = int(step)
    return REF_MODEL if step == 0 else f"{RESULTS}/train/{variant}/checkpoints/step_{step}"


def train_done(variant):
    return f"{RESULTS}/train/{variant}/run.json"


def train_targets():
    return [train_done(v) for v in VARIANTS]


def theory_targets():
    return [f"{RESULTS}/theory/derivations.json", f"{RESULTS}/theory/derivations.md"]


def on_success():
    """After a successful run: provenance beside every stage's outputs, then the stage times."""
    from grpo_repro.provenance import write_stage_provenance

    write_stage_provenance(RESULTS, config)
    print_stage_times()


def print_stage_times():
    """Wall time per stage (sum over its jobs' benchmark files), printed when a run succeeds."""
    from grpo_repro.final.summary import benchmarks

    rows = [(b["file"].split("/")[0], os.path.basename(b["file"])[:-4], b["seconds"]) for b in benchmarks(BENCH)]
    if rows:
        print("\nWall time per stage (s; jobs of a stage may run side by side):")
        for stage in dict.fromkeys(r[0] for r in rows):
            jobs = [r for r in rows if r[0] == stage]
            longest = max(jobs, key=lambda r: r[2])
            print(f"  {stage:10s} {sum(r[2] for r in jobs):8.1f}  ({len(jobs)} jobs, longest "
                  f"{longest[1]} {longest[2]:.1f})")
