"""The fixed-point stage's GRPO runs (Thm 2-3 at the population and at finite group size; Lemma 2
and Thm 9 for the two-KL variant) and their studies: one table of runs, name -> record.

A run is (variant, KL estimator, setting, beta, seed) at results/fixed_point/train/<name>
(grpo_repro.runs.Tree), <name> = {variant}_{kl}[_{setting}]/beta_{beta}/seed_{seed}; setting is
empty for the base runs, G<n> for the group-size sweep (train.num_generations = n), `long` for the
convergence check (fixed_point.long_steps steps instead of max_steps), `compact` for the
default graph's short run (fixed_point.compact's steps and samples) and a name of
fixed_point.factors for one changed training setting (the mechanism study). Every run is a row of
`table` (Snakemake's {run} wildcard is constrained to its names); a name is looked up, never
parsed. Three studies, each a named target, and the compact study of the default graph:

- main    (`fixed_point_main`):    fixed_point.runs at every beta and seed, and
  fixed_point.runs_sweep (the two-KL variant, alpha = train.two_kl_alpha) at sweep_beta, every seed;
- groups  (`fixed_point_groups`):  grpo/k3_ratio at sweep_beta for every G of group_sizes and the
  training G, every seed (the training G is main's run, trained once);
- factors (`fixed_point_factors`): fixed_point.runs_first_seed at every beta, and every factor of
  fixed_point.factors at sweep_beta, with the first seed, beside main's base runs (every kind of
  fixed_point.runs at sweep_beta); when fixed_point.long_steps is set, each of those trained
  long_steps steps (does doubling the steps move the plateau?); and the tabular control
  (grpo_repro.fixed_point.compare: the same update on a free per-prompt policy);
- compact (`snakemake -c2`, unless fixed_point.compact is null): fixed_point.compact's run kind at
  its beta and seeds, trained its max_steps with checkpoints every save_steps, each checkpoint
  sampled `samples` times (the law in minutes: most of the way to the plateau is covered early).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from grpo_repro import variants as reg
from grpo_repro.evaluate.tasks import Task
from grpo_repro.runs import REF, Tree

STUDIES = ("main", "groups", "factors", "compact")
SWEPT = "grpo/k3_ratio"  # the run kind of the group-size sweep and of the factors
LONG = "long"  # the setting of the convergence check's runs (fixed_point.long_steps steps)
COMPACT = "compact"  # the setting and study of the default graph's run (fixed_point.compact)
POOL = "pool"  # the split every run is evaluated on: the fixed_point.n_prompts trained prompts


@dataclass(frozen=True)
class Run:
    variant: str
    kl: str
    setting: str  # "" (base), "G<n>", `long` or a factor name
    beta: float
    seed: int
    group_size: int  # G: train.num_generations, or the sweep's G<n>
    alpha: float | None = None  # the two-KL weight of KL(pi || pi_ref) (two-KL variants only)

    @property
    def kind(self) -> str:
        """{variant}_{kl}[_{setting}]: the run without beta and seed."""
        return f"{self.variant}_{self.kl}" + (f"_{self.setting}" if self.setting else "")

    @property
    def name(self) -> str:
        return f"{self.kind}/beta_{self.beta:g}/seed_{self.seed}"

    @property
    def long(self) -> bool:
        return self.setting == LONG

    @property
    def compact(self) -> bool:
        return self.setting == COMPACT

    def as_dict(self) -> dict:
        return asdict(self)


def _runs(kinds, settings, betas, seeds, base_g, alpha) -> list[Run]:
    """Every run of kinds x settings x betas x seeds; a setting "G<n>" given as the int n."""
    out = []
    for kind in kinds:
        variant, kl = kind.split("/")
        a = None
        if reg.get(variant).two_kl:
            if alpha is None:
                raise ValueError(f"fixed-point run kind {kind}: a two-KL run needs alpha")
            a = float(alpha)
        for s in settings:
            g, name = (s, f"G{s}") if isinstance(s, int) else (int(base_g), s)
            out += [Run(variant, kl, name, float(b), int(sd), g, a) for b in betas for sd in seeds]
    return out


def study_runs(fp: dict, study: str, base_g: int, alpha: float | None = None) -> list[Run]:
    """The runs a study compares (see the module doc); alpha: train.two_kl_alpha."""
    seeds, first, sweep = fp["seeds"], fp["seeds"][:1], [fp["sweep_beta"]]
    at = dict(base_g=base_g, alpha=alpha)
    if study == "main":
        out = _runs(fp["runs"], [""], fp["betas"], seeds, **at)
        return out + _runs(fp.get("runs_sweep") or [], [""], sweep, seeds, **at)
    if study == "groups":
        sizes = sorted({int(base_g), *fp["group_sizes"]})
        settings = ["" if g == base_g else int(g) for g in sizes]
        return _runs([SWEPT], settings, sweep, seeds, **at)
    if study == COMPACT:
        c = fp.get(COMPACT)
        return _runs([c["run"]], [COMPACT], [c["beta"]], c["seeds"], **at) if c else []
    if study == "factors":
        out = _runs(fp["runs_first_seed"], [""], fp["betas"], first, **at)
        out += _runs([SWEPT], ["", *fp["factors"]], sweep, first, **at)
        long = [LONG] if fp.get("long_steps") else []
        out += _runs(fp["runs"], ["", *long], sweep, first, **at)
        return list({r.name: r for r in out}.values())
    raise ValueError(f"unknown study {study!r}; expected one of {STUDIES}")


def studies(fp: dict) -> list[str]:
    """The studies of this configuration: every one of STUDIES, compact only when configured."""
    return [s for s in STUDIES if s != COMPACT or fp.get(COMPACT)]


def tabular_variants(fp: dict) -> list[str]:
    """The variants of fixed_point.runs the tabular control trains: those anchored on pi_ref
    alone (the previous-policy anchor has no plateau, Thm 5; the tabular update has no two-KL
    term)."""
    kinds = [k.split("/")[0] for k in fp["runs"]]
    return [v for v in dict.fromkeys(kinds) if reg.get(v).ref_anchored]


def table(fp: dict, base_g: int, alpha: float | None = None) -> dict[str, Run]:
    """Name -> run of every run of every study, each once (study order)."""
    out: dict[str, Run] = {}
    for study in STUDIES:
        for r in study_runs(fp, study, base_g, alpha):
            out.setdefault(r.name, r)
    return out


def checkpoint_steps(fp: dict, setting: str = "") -> list[int]:
    """Every save_steps up to max_steps (any other setting: a base run's schedule); setting
    `long`: up to long_steps (none when it is null); `compact`: fixed_point.compact's save_steps up
    to its max_steps (none when it is null)."""
    if setting == COMPACT:
        c = fp.get(COMPACT) or {"save_steps": 1, "max_steps": 0}
        return list(range(c["save_steps"], int(c["max_steps"]) + 1, c["save_steps"]))
    last = (fp["long_steps"] or 0) if setting == LONG else fp["max_steps"]
    return list(range(fp["save_steps"], int(last) + 1, fp["save_steps"]))


def steps(fp: dict, run: Run) -> list[int]:
    """The checkpoints a run is evaluated at (checkpoint_steps of its setting)."""
    return checkpoint_steps(fp, run.setting)


def train_overrides(fp: dict, run: Run) -> dict:
    """The train keys one run changes over the default runs' (grpo_repro.train.run_settings.
    grpo_run's train_overrides; its GRPO seed is the run's): the run's beta, KL estimator, G
    and alpha (two-KL runs), the sweep's steps, learning rate and prompts per step (null: the
    default runs'), on the pool (many epochs), then a factor's keys."""
    schedule = steps(fp, run)
    train = {
        "beta": run.beta,
        "kl_estimator": run.kl,
        "learning_rate": fp["learning_rate"],
        "max_steps": schedule[-1],
        "save_steps": schedule[0],  # checkpoint_steps starts at the run's save_steps
        "on_pool": True,
        "num_generations": run.group_size,
    }
    if fp["prompts_per_step"] is not None:
        train["prompts_per_step"] = fp["prompts_per_step"]
    if run.alpha is not None:
        train["two_kl_alpha"] = run.alpha
    train.update(fp["factors"].get(run.setting, {}))
    return train


def eval_settings(base: dict, fp: dict, run: Run | str) -> dict:
    """What evaluating `run` reads: `base` (config.eval_settings) with the sweep's sample count:
    ref_samples for pi_ref (`ref`, p_ref measured finely), samples for a checkpoint
    (fixed_point.compact's for the compact run)."""
    if run == REF:
        samples = fp["ref_samples"]
    else:
        samples = fp[COMPACT]["samples"] if run.compact else fp["samples"]
    ecfg = {
        k: v for k, v in base["eval"].items() if k not in ("temperatures", "temperature_splits")
    }
    return {**base, "eval": {**ecfg, "samples": samples}}


def eval_tasks(fp_dir: str, name: str, steps: list[int]) -> list[Task]:
    """The tables of one evaluation job of the sweep (split `pool`, the evaluation temperature):
    pi_ref (run `ref`) at step 0, a run at every step of `steps`."""
    tree = Tree(fp_dir)
    steps = [0] if name == REF else [int(s) for s in steps]
    return [
        Task(s, POOL, None, tree.table(name, POOL, s), tree.table(name, POOL, s, "json"))
        for s in steps
    ]


def compare_inputs(fp: dict, fp_dir: str, runs: list[Run]) -> dict:
    """What comparing a study's `runs` reads: pi_ref's table (key `ref`), every run's table at
    every step (key `run@step`) and its KL table (key `kl@run`)."""
    tree = Tree(fp_dir)
    out = {REF: tree.table(REF, POOL, 0)}
    for r in runs:
        out.update({f"{r.name}@{s}": tree.table(r.name, POOL, s) for s in steps(fp, r)})
    return {**out, **{f"kl@{r.name}": kl_table(fp_dir, r.name) for r in runs}}


def kl_table(fp_dir: str, name: str) -> str:
    """The sequence-level KL(pi || pi_ref) per prompt of a run's last checkpoint."""
    return f"{fp_dir}/kl/{name}.csv"
