"""Configuration validation, the paths of every stage and the helpers shared by the rule files.

The configuration is checked (grpo_repro.config.check: schema + cross-field rules, errors naming
key, file and line) and then validated by Snakemake's validate() against the same JSON schema,
before any job is scheduled. Each rule's code inputs are derived (`code()`: the import closure of
its script in the package), never listed by hand; each GPU rule's `gpu` resource comes from
`gpus()`.
"""

import os
import sys

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from grpo_repro import config as cfg
from grpo_repro.codedeps import closure, put_on_pythonpath
from grpo_repro.figures.registry import FAMILIES
from grpo_repro.report.registry import CATEGORIES, PLOTS
from grpo_repro.report.registry import active as active_plots
from grpo_repro.report.tables import eval_entries
from grpo_repro.report.temperature import entries as temperature_entries
from grpo_repro.data.sets import check_sources
from grpo_repro.data.sizes import check_sizes, n_epoch_prompts
from grpo_repro.data.sources import source as data_source
from grpo_repro.evaluate import tasks as ev_tasks
from grpo_repro.fixed_point import runs as fp_runs
from grpo_repro.gpus import job_gpus
from grpo_repro.runs import REF, REPLICATE_ROOT, Tree, constraint, grpo_runs, run_name
from grpo_repro.train.schedule import checkpoint_steps

put_on_pythonpath(os.path.join(workflow.basedir, "workflow", "src"))  # jobs import this checkout
CONFIG_FILES = cfg.precedence(workflow.configfiles)  # the default file first, then --configfile's
try:
    cfg.check(config, CONFIG_FILES)
except cfg.ConfigError as err:
    raise WorkflowError(str(err)) from None
with cfg.schema_file() as schema:  # the schema with the variant names of grpo_repro.variants
    validate(config, schema)
# a dry run only builds the graph: it does not need the hub model in the cache
DRYRUN = any(
    a in ("--dry-run", "--dryrun") or (a.startswith("-") and not a.startswith("--") and "n" in a)
    for a in sys.argv[1:]
)
try:
    # local data and model exist (hub ids: offline runs only); the data sizes fit the data
    check_sources(config, check_hub=not DRYRUN)
    DATA_SIZES = check_sizes(config, CONFIG_FILES, check_hub=not DRYRUN)
except ValueError as err:
    raise WorkflowError(str(err)) from None

VARIANTS = list(config["variants"])
SEEDS = list(config["train"]["seeds"])  # GRPO seeds: one run per (variant, seed)
RESULTS = "results"
TREE = Tree(RESULTS)  # where a run's checkpoints, logs and tables live (grpo_repro.runs)
RUN_TABLE = grpo_runs(VARIANTS, SEEDS)  # name {variant}/seed_{seed} -> run: the {run} wildcard
RUNS = list(RUN_TABLE)
LOGS = f"{RESULTS}/logs"
BENCH = f"{RESULTS}/benchmarks"  # Snakemake benchmark files: wall time and memory of every job
ORGANISM = config["model"]["name_or_path"] is None
DATA_SOURCE = data_source(config)  # grpo_repro.data.sources.SOURCES[data.source]
HUB_DATA = DATA_SOURCE.hub_id(config["data"]) is not None  # a split read from the hub
if ORGANISM and not HUB_DATA:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing to download: avoid ~25 s of hub retries
REF_MODEL = TREE.ref_model() if ORGANISM else config["model"]["name_or_path"]
N_EPOCH_PROMPTS = n_epoch_prompts(config, DATA_SIZES)
STEPS = checkpoint_steps(config["train"], N_EPOCH_PROMPTS)  # step 0 = pi_ref
SRC = "workflow/src"
SCRIPTS = "workflow/scripts"
ENV = (
    "../../envs/cpu.yaml" if ORGANISM else "../../envs/gpu.yaml"
)  # conda: environment of every rule
FIG = f"{RESULTS}/figures"
FIG_CFG = config["figures"]
SPLITS = list(config["eval"]["splits"])
EVAL_SPLITS = ev_tasks.task_splits(
    config
)  # the splits evaluation reads (eval.splits + temperature_splits)
# what GRPO training reads (the prompts and pi_ref are its inputs): other keys, and the list of
# GRPO seeds (each run has its own), never retrain
TRAIN_CONFIG = cfg.train_settings(config)
REPORT = f"{RESULTS}/report"
REPORT_DATA = f"{REPORT}/data"
EVAL_ENTRIES = eval_entries(RESULTS, VARIANTS, SEEDS, SPLITS, STEPS)
TEMP_ENTRIES = temperature_entries(
    RESULTS, VARIANTS, SEEDS, STEPS, config
)  # [] without temperatures
TEMP_SPLITS = list(dict.fromkeys(e["split"] for e in TEMP_ENTRIES))
REPORT_COMPUTE = [  # the report stage's compute rules (plot rules come from PLOTS)
    "report_training",
    "report_landing",
    "report_tables",
    "report_trajectories",
    "report_amplification",
    "report_overlay",
    "report_summary",
] + (["report_temperature"] if TEMP_ENTRIES else [])
REPORT_PLOTS = active_plots(PLOTS, {"temperatures"} if TEMP_ENTRIES else set())
# the landing page's picture: success against the sampling temperature (none without temperatures)
LANDING_PICTURE = next(
    (f"{REPORT}/{p.figures[0][0]}.png" for p in REPORT_PLOTS if p.name == "temperature"), []
)


wildcard_constraints:
    split="|".join(EVAL_SPLITS),
    step=r"\d+",


def code(script, *modules):
    """The package files a rule's script (under workflow/scripts/) imports, directly or not, plus
    the closure of `modules` (dotted names it loads by name): the rule's code inputs."""
    return closure([f"{SCRIPTS}/{script}", *modules], SRC)


def gpus(kind):
    """The `gpu` resource of a job of `kind` ("train", "sft", "eval", "kl";
    grpo_repro.gpus.job_gpus): 0 on a configuration that runs on the CPU. A local run on a GPU
    node limits the jobs' sum with --resources gpu=N (workflow/profiles/gpu_node); each job's
    script takes its own devices (grpo_repro.gpus.acquire)."""
    return job_gpus(config, kind)


def settings(*sections):
    """The configuration sections a job reads, as its params (a change reruns only that job)."""
    return {k: config[k] for k in sections}


def all_targets():
    """Every final artifact of the graph."""
    return (
        theory_targets()
        + figures_targets()
        + data_targets()
        + train_targets()
        + evaluate_targets()
        + report_targets()
    )


# ------------------------------------------------------------------------------ theory, data
def theory_targets():
    return list(rules.theory_derivations.output)


def data_outputs(root=RESULTS):
    """The files of data_prepare under `root`: every split of grpo_repro.data.sets that this run
    has."""
    tree = Tree(root)
    out = {
        "train": tree.data("train"),
        "test": tree.data("test"),
        "pool": tree.data("train_pool"),
        "stats": f"{root}/data/splits.json",
        "tokenizer": directory(f"{root}/data/tokenizer"),
    }
    if config["data"]["n_val"]:
        out["val"] = tree.data("val")
    if ORGANISM:
        out["sft"] = tree.data("sft")
    return out


def data_inputs():
    """The local files of the data source that data_prepare reads (Source.paths, keyed by their
    config keys): an edited file reruns it."""
    paths = DATA_SOURCE.paths(config["data"])
    return {DATA_SOURCE.path_keys[s]: p for s, p in paths.items() if p is not None}


def data_targets():
    return list(rules.data_prepare.output)


# ------------------------------------------------------------------------------ figures
def figure_csvs(fam):
    return {name: f"{FIG}/{stem}.csv" for name, stem in fam.csvs.items()}


def figure_files(fam):
    """Outputs of a family's plot rule: PNGs (marked for the report), then PDFs."""
    pngs, pdfs = [], []
    for stem, labels in fam.stems(FIG_CFG):
        png = report(
            f"{FIG}/{stem}.png",
            caption=f"../report/{fam.caption}",
            category=CATEGORIES["figures"],
            subcategory=fam.subcategory,
            labels={"figure": stem, **labels},
        )
        pngs.append(png)
        pdfs.append(f"{FIG}/{stem}.pdf")
    return pngs + pdfs


def figures_targets():
    """Every output of the figures stage: the CSVs and every figure (PNG + PDF)."""
    out = []
    for fam in FAMILIES:
        out += list(figure_csvs(fam).values())
        out += [f"{FIG}/{stem}.{ext}" for stem, _ in fam.stems(FIG_CFG) for ext in ("png", "pdf")]
    return out


# ------------------------------------------------------------------------------ train
def ref_model_input():
    """pi_ref as a job input: the organism's SFT run, or nothing for a hub id / external path."""
    return [rules.train_reference.output.run] if ORGANISM else []


def grpo_prompts(tree=TREE):
    """The prompts GRPO trains on: the training pool (train.on_pool) or the training split."""
    return tree.data("train_pool" if config["train"]["on_pool"] else "train")


def train_targets():
    ref = list(rules.train_reference.output) if ORGANISM else []
    return ref + [TREE.run_json(r) for r in RUNS]


# ------------------------------------------------------------------------------ evaluate
def eval_data(tree=TREE):
    """The prompt set of each split an evaluation job reads (EVAL_SPLITS)."""
    return [tree.split_file(s) for s in EVAL_SPLITS]


def eval_tasks(run):
    """The tables of one run's evaluation job (grpo_repro.evaluate.tasks; `run` may be the
    wildcard {run})."""
    return ev_tasks.tasks(RESULTS, run, STEPS, config)


def evaluate_targets():
    """Every evaluation table and its JSON sidecar."""
    return [p for r in [REF, *RUNS] for t in eval_tasks(r) for p in (t.csv, t.json)]


# ------------------------------------------------------------------------------ report
def report_figures(plot, split=None):
    """Output files of one plot rule; PNGs (and the HTML table) are marked for the report."""
    out = []
    for stem, caption, sub, label in plot.figures:
        stem = stem.format(split=split) if split else stem
        for ext in plot.ext:
            path = f"{REPORT}/{stem}.{ext}"
            if ext in ("png", "html"):
                path = report(
                    path,
                    caption=f"../report/{caption}",
                    category=CATEGORIES[plot.stage],
                    subcategory=sub,
                    labels={"figure": label, "split": split or "all"},
                )
            out.append(path)
    return out


def report_targets():
    """Every output of the report stage: data files, summary, figures and the summary table."""
    out = [f for r in REPORT_COMPUTE for f in getattr(rules, r).output]
    for plot in REPORT_PLOTS:
        for split in SPLITS if plot.per_split else [None]:
            out += [str(p) for p in report_figures(plot, split)]
    return out


# ------------------------------------------------------------------------------ replicates
REP = config["replicates"]
REP_DIR = f"{RESULTS}/replicates"
REP_ROOT = REPLICATE_ROOT.format(
    results=RESULTS, rep="{rep}"
)  # one replicate's results/ (a pattern)
REP_TREE = Tree(REP_ROOT)
REP_RUN_TABLE = grpo_runs(REP["variants"], SEEDS)  # a replicate's runs: the {run} wildcard
REP_SEEDS = list(
    dict.fromkeys([int(config["seed"]), *REP["seeds"]])
)  # the default graph's pi_ref first


def rep_tree(w):
    """The results tree of replicate {rep}."""
    return Tree(REPLICATE_ROOT.format(results=RESULTS, rep=w.rep))


def rep_tasks(root, run):
    """A replicate's evaluation tables: pi_ref, and each run's final checkpoint only."""
    last = 0 if run == REF else int(STEPS[-1])
    return [t for t in ev_tasks.tasks(root, run, STEPS, config) if t.step == last]


def rep_entries(root):
    return temperature_entries(root, REP["variants"], SEEDS, STEPS, config)


def rep_best(seed):
    """The best-vs-best table of replicate `seed` (the default graph's for `seed` itself)."""
    if int(seed) == int(config["seed"]):
        return rules.report_temperature.output.best
    return f"{REPLICATE_ROOT.format(results=RESULTS, rep=seed)}/report/data/best_vs_best.csv"


# ------------------------------------------------------------------------------ fixed point
FP = config["fixed_point"]
FP_DIR = f"{RESULTS}/fixed_point"
FP_TREE = Tree(FP_DIR)
FP_G = config["train"]["num_generations"]  # G of the base runs
FP_STUDIES = list(fp_runs.STUDIES)
# {variant}_{kl}[_{setting}]/beta_{beta}/seed_{seed} -> run: every run of every study, each once
FP_TABLE = fp_runs.table(FP, FP_G, config["train"]["two_kl_alpha"])
FP_LONG = [n for n, r in FP_TABLE.items() if r.long]  # the convergence check's runs
FP_STEPS = fp_runs.checkpoint_steps(FP)
FP_LONG_STEPS = fp_runs.checkpoint_steps(FP, long=True)


def fp_study(study):
    """The runs a study compares (grpo_repro.fixed_point.runs.study_runs)."""
    return fp_runs.study_runs(FP, study, FP_G, config["train"]["two_kl_alpha"])


def on_start():
    """When a run starts, before its first job (never in a dry run, never inside a cluster job):
    vLLM installed and the hub reachable for any executor; CUDA and bf16 only when the jobs run
    on this machine. The executor is known here, not while the Snakefile loads: Snakemake sets
    it after parsing, so `workflow.local_exec` (the executor plugin's local_exec: True for
    `local`, False for `slurm`) tells a local run from a cluster's login node. The GPU rules'
    scripts check the device again on the node that runs them (grpo_repro.preflight)."""
    from grpo_repro.preflight import PreflightError, check_at_start

    try:
        check_at_start(config, local=workflow.local_exec and not workflow.touch, files=CONFIG_FILES)
    except PreflightError as err:
        raise WorkflowError(str(err)) from None


def on_success():
    """After a successful run: provenance beside every stage's outputs, then the stage times."""
    from grpo_repro.provenance import write_stage_provenance
    from grpo_repro.report.summary import stage_times

    write_stage_provenance(RESULTS, config)
    print(stage_times(BENCH))
