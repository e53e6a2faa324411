"""The workflow's plan (every stage of Sec. 6 and the figures of Sec. 2-5 at the configuration's
sizes): the names the rule files share, built once from the validated configuration by `Plan`.

workflow/rules/common.smk builds `P = Plan(config, data_sizes)`; every rule file reads its paths,
run tables, checkpoint steps and entries from P (and its helpers: `code`, `settings`, `gpus`), and
defines no global another file reads. What needs Snakemake's own objects (`rules`, `report()`,
`directory()`) stays in the rule files. Jobs never import this module (it reads the report's and
fixed-point study's registries): a rule passes what its job needs as params.
"""

from __future__ import annotations

from grpo_repro import hub
from grpo_repro.data.sizes import n_epoch_prompts
from grpo_repro.data.sources import source as data_source
from grpo_repro.evaluate import tasks as ev_tasks
from grpo_repro.figures.registry import FAMILIES
from grpo_repro.fixed_point import runs as fp_runs
from grpo_repro.memory import derived_layout
from grpo_repro.report.registry import CATEGORIES, PLOTS
from grpo_repro.report.registry import active as active_plots
from grpo_repro.report.tables import eval_entries
from grpo_repro.report.temperature import entries as temperature_entries
from grpo_repro.runs import REF, REPLICATE_ROOT, Tree, grpo_runs, replicate_variants
from grpo_repro.train.run_settings import checkpoint_steps, grpo_run
from grpo_repro.zero import CONTROL_TRAIN

#: the report stage's compute rules (its plot rules come from grpo_repro.report.registry.PLOTS)
REPORT_COMPUTE = [
    "report_training",
    "report_landing",
    "report_tables",
    "report_trajectories",
    "report_amplification",
    "report_overlay",
    "report_summary",
]
#: the compact fixed-point study's outputs in the default graph (under fp_compact_dir)
FP_COMPACT_FILES = ["summary.md", "fixed_point.png", "data/resolution.csv"]


class Plan:
    """The run's shared names (attributes), from the validated configuration and the data's split
    sizes (grpo_repro.data.sizes.check_sizes)."""

    def __init__(self, config: dict, data_sizes: dict, results: str = "results"):
        self.config = config
        # --- every stage: where results, logs and benchmarks go; the runs and their steps
        self.results = results
        self.logs = f"{results}/logs"  # every job's log
        self.bench = f"{results}/benchmarks"  # Snakemake benchmark files: wall time and memory
        self.tree = Tree(results)  # where a run's checkpoints and tables live (grpo_repro.runs)
        self.variants = list(config["variants"])
        self.seeds = list(config["train"]["seeds"])  # GRPO seeds: one run per (variant, seed)
        self.run_table = grpo_runs(self.variants, self.seeds)  # {variant}/seed_{seed} -> run
        self.runs = list(self.run_table)
        self.organism = config["model"]["name_or_path"] is None  # pi_ref is a model we build
        # pi_ref as a job input: the organism's SFT run, nothing for a hub id or external path
        self.ref_input = [self.tree.run_json(REF)] if self.organism else []
        # pi_ref in the jobs' params: the built organism, a local directory, or a hub id at its
        # pinned revision, "id@revision" (grpo_repro.hub.spec: each job reads that snapshot)
        self.ref_model = self.tree.ref_model() if self.organism else hub.spec(config["model"])
        # every rule's conda environment (relative to workflow/rules)
        self.env = "../../envs/cpu.yaml" if self.organism else "../../envs/gpu.yaml"
        self.n_epoch_prompts = n_epoch_prompts(config, data_sizes)
        self.steps = checkpoint_steps(config["train"], self.n_epoch_prompts)  # step 0 = pi_ref
        self.splits = list(config["eval"]["splits"])
        self.eval_splits = ev_tasks.task_splits(config)  # the splits evaluation reads
        self.data_source = data_source(config)  # grpo_repro.data.sources.SOURCES[data.source]
        # --- figures
        self.fig = f"{results}/figures"
        self.fig_cfg = config["figures"]
        # --- fixed_point: every study's runs (grpo_repro.fixed_point.runs), each once
        fp = self.fp = config["fixed_point"]
        self.fp_dir = f"{results}/fixed_point"
        self.fp_tree = Tree(self.fp_dir)
        self.fp_g = config["train"]["num_generations"]  # G of the base runs
        self.fp_studies = fp_runs.studies(fp)  # compact only when fixed_point.compact is set
        self.fp_table = fp_runs.table(fp, self.fp_g, config["train"]["two_kl_alpha"])
        self.fp_long = [n for n, r in self.fp_table.items() if r.long]  # convergence check
        self.fp_compact = [n for n, r in self.fp_table.items() if r.compact]  # default graph's
        self.fp_steps = fp_runs.checkpoint_steps(fp)
        self.fp_long_steps = fp_runs.checkpoint_steps(fp, fp_runs.LONG)
        self.fp_compact_steps = fp_runs.checkpoint_steps(fp, fp_runs.COMPACT)
        self.fp_compact_resample = (fp[fp_runs.COMPACT] or {}).get("resample", {})
        self.fp_compact_dir = f"{self.fp_dir}/{fp_runs.COMPACT}"  # its page, figure and data
        # --- report: the tables it reads, its rules and pictures
        self.report = f"{results}/report"
        self.report_data = f"{self.report}/data"
        self.eval_entries = eval_entries(
            results, self.variants, self.seeds, self.splits, self.steps
        )
        self.temp_entries = self.temperature_entries(results, self.variants)  # [] without
        self.temp_splits = list(dict.fromkeys(e["split"] for e in self.temp_entries))
        self.report_compute = REPORT_COMPUTE + (["report_temperature"] if self.temp_entries else [])
        self.report_plots = active_plots(PLOTS, {"temperatures"} if self.temp_entries else set())
        # the landing page's picture: success against the sampling temperature (none without)
        self.landing_picture = next(
            (
                f"{self.report}/{p.figures[0][0]}.png"
                for p in self.report_plots
                if p.name == "temperature"
            ),
            [],
        )
        # the compact fixed-point study's data the summary reads, picture the landing page shows
        self.fp_compact_data = (
            {
                "fp_summary": f"{self.fp_compact_dir}/data/summary.csv",
                "fp_resolution": f"{self.fp_compact_dir}/data/resolution.csv",
            }
            if self.fp_compact
            else {}
        )
        self.fp_compact_picture = (
            f"{self.fp_compact_dir}/fixed_point.png" if self.fp_compact else []
        )
        # --- replicates of the built pi_ref (named target `replicates`)
        self.rep_dir = f"{results}/replicates"
        self.rep_root = self.rep_results("{rep}")  # one replicate's results/ (a pattern)
        self.rep_tree = Tree(self.rep_root)
        self.rep_variants = replicate_variants(config)  # replicates.variants, or the first
        self.rep_run_table = grpo_runs(self.rep_variants, self.seeds)  # the {run} wildcard
        # the default graph's pi_ref first
        seeds = config["replicates"]["seeds"]
        self.rep_seeds = list(dict.fromkeys([int(config["seed"]), *seeds]))

    # --- data
    def data_files(self, root: str | None = None) -> dict:
        """data_prepare's files under `root` (default: results): every split of
        grpo_repro.data.sets this run has, the split statistics and the tokenizer directory."""
        root = root or self.results
        tree = Tree(root)
        out = {
            "train": tree.data("train"),
            "test": tree.data("test"),
            "pool": tree.data("train_pool"),
            "stats": f"{root}/data/splits.json",
            "tokenizer": f"{root}/data/tokenizer",
        }
        if self.config["data"]["n_val"]:
            out["val"] = tree.data("val")
        if self.organism:
            out["sft"] = tree.data("sft")
        return out

    def data_inputs(self) -> dict:
        """The data source's local files data_prepare reads (Source.paths, keyed by config key):
        an edited file reruns it."""
        src = self.data_source
        paths = src.paths(self.config["data"])
        return {src.path_keys[s]: p for s, p in paths.items() if p is not None}

    # --- train and evaluate
    def train_targets(self) -> list[str]:
        """pi_ref's SFT outputs (a built model) and every GRPO run's record."""
        t = self.tree
        ref = [t.ref_model(), f"{t.train_dir(REF)}/sft_log.csv", t.run_json(REF)]
        return (ref if self.organism else []) + [t.run_json(r) for r in self.runs]

    def grpo_run(self, name: str):
        """The GRPORun of run `name` of the default graph (grpo_repro.train.run_settings.grpo_run)."""
        r = self.run_table[name]
        return grpo_run(self.config, r.variant, r.seed)

    def grpo_prompts(self, tree: Tree | None = None) -> str:
        """The prompts GRPO trains on: the training pool (train.on_pool) or the training split."""
        tree = tree or self.tree
        return tree.data("train_pool" if self.config["train"]["on_pool"] else "train")

    def eval_data(self, tree: Tree | None = None) -> list[str]:
        """The prompt set of each split an evaluation job reads (eval_splits)."""
        tree = tree or self.tree
        return [tree.split_file(s) for s in self.eval_splits]

    def eval_tasks(self, run: str, root: str | None = None) -> list:
        """The tables of one run's evaluation job (grpo_repro.evaluate.tasks; `run` may be the
        wildcard {run})."""
        return ev_tasks.tasks(root or self.results, run, self.steps, self.config)

    def evaluate_targets(self) -> list[str]:
        """Every evaluation table and its JSON sidecar."""
        return [p for r in [REF, *self.runs] for t in self.eval_tasks(r) for p in (t.csv, t.json)]

    # --- figures
    def figure_csvs(self, fam) -> dict:
        return {name: f"{self.fig}/{stem}.csv" for name, stem in fam.csvs.items()}

    def figure_files(self, fam) -> list[tuple[str, dict | None]]:
        """(path, the report()'s arguments or None) of a family's plot rule's outputs: PNGs (for
        the report), then PDFs."""
        pngs, pdfs = [], []
        for stem, labels in fam.stems(self.fig_cfg):
            kw = dict(
                caption=f"../report/{fam.caption}",
                category=CATEGORIES["figures"],
                subcategory=fam.subcategory,
                labels={"figure": stem, **labels},
            )
            pngs.append((f"{self.fig}/{stem}.png", kw))
            pdfs.append((f"{self.fig}/{stem}.pdf", None))
        return pngs + pdfs

    def figures_targets(self) -> list[str]:
        """Every output of the figures stage: the CSVs and every figure (PNG + PDF)."""
        out = []
        for fam in FAMILIES:
            out += [*self.figure_csvs(fam).values(), *(p for p, _ in self.figure_files(fam))]
        return out

    # --- fixed_point
    def fp_study(self, study: str) -> list:
        """The runs a study compares (grpo_repro.fixed_point.runs.study_runs)."""
        return fp_runs.study_runs(self.fp, study, self.fp_g, self.config["train"]["two_kl_alpha"])

    def fp_run(self, name: str):
        """The GRPORun of fixed-point run `name`: its study's train keys
        (grpo_repro.fixed_point.runs.train_overrides) on a layout that fits one GPU
        (grpo_repro.memory.derived_layout)."""
        r = self.fp_table[name]
        over = derived_layout(self.config, fp_runs.train_overrides(self.fp, r))
        return grpo_run(self.config, r.variant, r.seed, train_overrides=over)

    def fixed_point_targets(self) -> list[str]:
        """The default graph's share of the stage: the compact study's page, figure and resolution
        table (none when fixed_point.compact is null); the other studies are named targets."""
        if fp_runs.COMPACT not in self.fp_studies:
            return []
        return [f"{self.fp_compact_dir}/{f}" for f in FP_COMPACT_FILES]

    # --- zero
    def zero_control_run(self):
        """The GRPORun of the zero-success control: the first variant's first-seed run in one
        process (grpo_repro.zero.CONTROL_TRAIN) on a layout that fits one GPU
        (grpo_repro.memory.derived_layout)."""
        over = derived_layout(self.config, CONTROL_TRAIN)
        return grpo_run(self.config, self.variants[0], self.seeds[0], train_overrides=over)

    # --- report and replicates
    def report_figures(self, plot, split=None) -> list[tuple[str, dict | None]]:
        """(path, the report()'s arguments or None) of one report plot rule's outputs; PNGs (and
        the HTML table) go to the report."""
        out = []
        for stem, caption, sub, label in plot.figures:
            stem = stem.format(split=split) if split else stem
            for ext in plot.ext:
                kw = None
                if ext in ("png", "html"):
                    kw = dict(
                        caption=f"../report/{caption}",
                        category=CATEGORIES[plot.stage],
                        subcategory=sub,
                        labels={"figure": label, "split": split or "all"},
                    )
                out.append((f"{self.report}/{stem}.{ext}", kw))
        return out

    def report_plot_files(self) -> list[str]:
        """Every report plot rule's outputs (each split of a per-split plot)."""
        return [
            path
            for plot in self.report_plots
            for split in (self.splits if plot.per_split else [None])
            for path, _ in self.report_figures(plot, split)
        ]

    def temperature_entries(self, root: str, variants) -> list[dict]:
        """The tables at the sampling temperatures under `root` (grpo_repro.report.temperature)."""
        return temperature_entries(root, variants, self.seeds, self.steps, self.config)

    def rep_results(self, rep) -> str:
        """The results folder of replicate `rep`."""
        return REPLICATE_ROOT.format(results=self.results, rep=rep)

    def rep_tasks(self, root: str, run: str) -> list:
        """A replicate's evaluation tables: pi_ref, and each run's final checkpoint only."""
        last = 0 if run == REF else int(self.steps[-1])
        return [t for t in self.eval_tasks(run, root) if t.step == last]

    def rep_tree_of(self, rep) -> Tree:
        """The results tree of replicate `rep`."""
        return Tree(self.rep_results(rep))

    def rep_entries(self, root: str) -> list[dict]:
        """A replicate's tables at the sampling temperatures (its variants, every GRPO seed)."""
        return self.temperature_entries(root, self.rep_variants)

    def rep_best(self, seed) -> str:
        """The best-vs-best table of replicate `seed` (the default graph's for `seed` itself:
        report_temperature's)."""
        if int(seed) == int(self.config["seed"]):
            return f"{self.report_data}/best_vs_best.csv"
        return f"{self.rep_results(seed)}/report/data/best_vs_best.csv"
