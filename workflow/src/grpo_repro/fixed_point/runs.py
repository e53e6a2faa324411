"""The fixed-point stage's GRPO runs (Thm 2-3 at the population and at finite group size)
and their studies: names, settings and evaluation tasks.

A run is (variant, KL estimator, setting, beta, seed) at results/fixed_point/train/<name>,
<name> = {variant}_{kl}[_{setting}]/beta_{beta}/seed_{seed}; setting is empty for the base runs,
G<n> for the group-size sweep (train.num_generations = n), `long` for the convergence check
(fixed_point.long_steps steps instead of max_steps) and a name of fixed_point.factors for one
changed training setting (the mechanism study). Three studies, each a named target:

- main    (`fixed_point_main`):    fixed_point.runs at every beta and seed;
- groups  (`fixed_point_groups`):  grpo/k3_ratio at sweep_beta for every G of group_sizes and the
  training G, every seed (the training G is main's run, trained once);
- factors (`fixed_point_factors`): fixed_point.runs_first_seed at every beta, and every factor of
  fixed_point.factors at sweep_beta, with the first seed, beside main's base runs (every kind of
  fixed_point.runs at sweep_beta); when fixed_point.long_steps is set, each of those trained
  long_steps steps (does doubling the steps move the plateau?); and the tabular control
  (grpo_repro.fixed_point.tabular: the same update on a free per-prompt policy).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from grpo_repro import variants as reg
from grpo_repro.evaluate.tasks import Task

STUDIES = ("main", "groups", "factors")
SWEPT = "grpo/k3_ratio"  # the run kind of the group-size sweep and of the factors
LONG = "long"  # the setting of the convergence check's runs (fixed_point.long_steps steps)


def variant_re() -> str:
    """Regex alternation of the trained variants' names (grpo_repro.variants, read at call time)."""
    return "(" + "|".join(reg.names(trained=True)) + ")"


def _kind_re() -> re.Pattern:
    """{variant}_{kl}[_{setting}] with groups variant, kl, setting."""
    return re.compile(rf"^{variant_re()}_(k3_ratio|k3)(?:_(G\d+|[a-z][a-z0-9_]*))?$")


@dataclass(frozen=True)
class Run:
    variant: str
    kl: str
    setting: str  # "" (base), "G<n>" or a factor name
    beta: float
    seed: int

    @property
    def kind(self) -> str:
        """{variant}_{kl}[_{setting}]: the run without beta and seed."""
        return f"{self.variant}_{self.kl}" + (f"_{self.setting}" if self.setting else "")

    @property
    def name(self) -> str:
        return f"{self.kind}/beta_{self.beta:g}/seed_{self.seed}"

    @property
    def setting_g(self) -> int | None:
        """G of a group-size setting (G<n>), None for the others."""
        return int(self.setting[1:]) if re.fullmatch(r"G\d+", self.setting) else None

    def group_size(self, base_g: int) -> int:
        """G of the run: the setting's, else train.num_generations."""
        return self.setting_g or int(base_g)


def parse(name: str) -> Run:
    """The Run of a name {variant}_{kl}[_{setting}]/beta_{beta}/seed_{seed}."""
    kind, beta, seed = name.split("/")
    m = _kind_re().match(kind)
    if not m:
        raise ValueError(f"not a fixed-point run name: {name!r}")
    variant, kl, setting = m.groups()
    return Run(variant, kl, setting or "", float(beta.removeprefix("beta_")), int(seed[5:]))


def _runs(kinds, settings, betas, seeds) -> list[Run]:
    return [
        Run(*k.split("/"), setting=s, beta=float(b), seed=int(sd))
        for k in kinds
        for s in settings
        for b in betas
        for sd in seeds
    ]


def study_runs(fp: dict, study: str, base_g: int) -> list[Run]:
    """The runs a study compares (see the module doc)."""
    seeds, first = fp["seeds"], fp["seeds"][:1]
    if study == "main":
        return _runs(fp["runs"], [""], fp["betas"], seeds)
    if study == "groups":
        sizes = sorted({int(base_g), *fp["group_sizes"]})
        settings = ["" if g == base_g else f"G{g}" for g in sizes]
        return _runs([SWEPT], settings, [fp["sweep_beta"]], seeds)
    if study == "factors":
        sweep = [fp["sweep_beta"]]
        out = _runs(fp["runs_first_seed"], [""], fp["betas"], first)
        out += _runs([SWEPT], ["", *fp["factors"]], sweep, first)
        out += _runs(fp["runs"], ["", *([LONG] if fp.get("long_steps") else [])], sweep, first)
        return list({r.name: r for r in out}.values())
    raise ValueError(f"unknown study {study!r}; expected one of {STUDIES}")


def tabular_variants(fp: dict) -> list[str]:
    """The variants of fixed_point.runs the tabular control trains: those with a predicted plateau
    (grpo_repro.variants.plateau_base; the previous-policy anchor has none, Thm 5)."""
    kinds = [k.split("/")[0] for k in fp["runs"]]
    return [v for v in dict.fromkeys(kinds) if reg.plateau_base(v) is not None]


def all_runs(fp: dict, base_g: int) -> list[Run]:
    """Every run of every study, each once."""
    out: dict[str, Run] = {}
    for study in STUDIES:
        for r in study_runs(fp, study, base_g):
            out.setdefault(r.name, r)
    return list(out.values())


def checkpoint_steps(fp: dict, long: bool = False) -> list[int]:
    """Every save_steps up to max_steps (long: up to long_steps; none when it is null)."""
    last = (fp["long_steps"] or 0) if long else fp["max_steps"]
    return list(range(fp["save_steps"], int(last) + 1, fp["save_steps"]))


def steps(fp: dict, run: Run | str) -> list[int]:
    """The checkpoints a run is evaluated at: checkpoint_steps, long for a `long` run."""
    run = parse(run) if isinstance(run, str) else run
    return checkpoint_steps(fp, long=run.setting == LONG)


def train_settings(base: dict, fp: dict, run: Run) -> dict:
    """What one run's training reads: `base` (the default runs' training settings: seed, train,
    data) with the run's beta, KL estimator and seed, the sweep's steps and learning rate, on the
    pool (many epochs), then the run's setting (G<n>: num_generations; a factor: its keys)."""
    train = {
        **base["train"],
        "beta": run.beta,
        "kl_estimator": run.kl,
        "learning_rate": fp["learning_rate"],
        "max_steps": steps(fp, run)[-1],
        "save_steps": fp["save_steps"],
        "on_pool": True,
        "seeds": [run.seed],
    }
    if run.setting_g:
        train["num_generations"] = run.setting_g
    elif run.setting and run.setting != LONG:
        train.update(fp["factors"][run.setting])
    return {**base, "train": train}


def eval_settings(base: dict, fp: dict, name: str) -> dict:
    """What evaluating run `name` reads: `base` (config.eval_settings) with the sweep's sample
    count: ref_samples for pi_ref (run `ref`, p_ref measured finely), samples for a checkpoint."""
    samples = fp["ref_samples"] if name == "ref" else fp["samples"]
    ecfg = {
        k: v for k, v in base["eval"].items() if k not in ("temperatures", "temperature_splits")
    }
    return {**base, "eval": {**ecfg, "samples": samples}}


def eval_tasks(fp_dir: str, name: str, steps: list[int]) -> list[Task]:
    """The tables of one evaluation job of the sweep (split `pool`, the evaluation temperature):
    pi_ref (run `ref`) at step 0, a run at every step of `steps`."""
    steps = [0] if name == "ref" else [int(s) for s in steps]
    return [
        Task(
            s,
            "pool",
            None,
            *(f"{fp_dir}/evaluate/{name}/pool/step_{s}.{e}" for e in ("csv", "json")),
        )
        for s in steps
    ]


def table_paths(fp_dir: str, fp: dict, names: list[str]) -> dict:
    """Evaluation table of pi_ref (key `ref`) and of every run at each of its steps (key
    `run@step`)."""
    out = {"ref": f"{fp_dir}/evaluate/ref/pool/step_0.csv"}
    for name in names:
        for step in steps(fp, name):
            out[f"{name}@{step}"] = f"{fp_dir}/evaluate/{name}/pool/step_{step}.csv"
    return out


def compare_inputs(fp: dict, fp_dir: str, study: str, base_g: int) -> dict:
    """What comparing a study reads: pi_ref's table, every run's table at every step and its KL
    table (key `kl@run`); study factors: the tabular control (key `tabular`)."""
    names = [r.name for r in study_runs(fp, study, base_g)]
    tabular = {"tabular": f"{fp_dir}/factors/data/tabular.csv"} if study == "factors" else {}
    return {
        **table_paths(fp_dir, fp, names),
        **{f"kl@{name}": f"{fp_dir}/kl/{name}.csv" for name in names},
        **tabular,
    }
