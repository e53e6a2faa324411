"""One run and path model for every GRPO run of the graph (Sec. 6: training, then evaluation of
every checkpoint): where a run's checkpoints, logs and tables live, and which runs exist.

A results tree (`Tree(root)`) is results/ (the default graph), one replicate's
results/replicates/seed_<r>/ or the fixed-point stage's results/fixed_point/. Each holds

    data/<set>.jsonl                                   the prompt sets
    train/ref/model                                    the built pi_ref
    train/<run>/run.json, train_log.csv                a run's record and TRL's log
    train/<run>/checkpoints/step_<N>                   its policy after N optimizer steps
    evaluate/<run>/<split>/step_<N>[_T<t>].{csv,json}  an evaluation table (T<t>: temperature t)

with pi_ref as run `ref` (step 0). Runs are rows of explicit tables, name -> record: `grpo_runs`
for the default graph and the replicates, grpo_repro.fixed_point.runs.table for the fixed-point
studies. Snakemake's {run} wildcard is constrained to a table's names (`constraint`); a name is
looked up in its table, never parsed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

REF = "ref"  # pi_ref's run name: its tables are step 0 of every run's trajectory
SPLIT_FILES = {"test": "test", "train": "train_pool", "val": "val"}  # split -> prompt set
# a replicate's results tree (a pattern of the wildcard {rep}: its data and SFT seed)
REPLICATE_ROOT = "{results}/replicates/seed_{rep}"


def temp_tag(t: float) -> str:
    """The temperature as it appears in a file name: 0.7 -> "0.7", 1.0 -> "1", 0 -> "0"."""
    return f"{float(t):g}"


@dataclass(frozen=True)
class Tree:
    """The paths of one results tree (see the module doc); `root` may hold wildcards."""

    root: str

    def data(self, name: str) -> str:
        """A prompt set (train, test, val, train_pool, sft)."""
        return f"{self.root}/data/{name}.jsonl"

    def split_file(self, split: str) -> str:
        """The prompt set an evaluation split reads: test, val, and `train` = the tracked pool."""
        return self.data(SPLIT_FILES[split])

    def train_dir(self, run: str) -> str:
        return f"{self.root}/train/{run}"

    def run_json(self, run: str) -> str:
        """The record a finished training run writes last (its completion marker)."""
        return f"{self.train_dir(run)}/run.json"

    def train_log(self, run: str) -> str:
        return f"{self.train_dir(run)}/train_log.csv"

    def ref_model(self) -> str:
        """The built pi_ref (the organism's SFT output)."""
        return f"{self.train_dir(REF)}/model"

    def checkpoint(self, run: str, step: int) -> str:
        return f"{self.train_dir(run)}/checkpoints/step_{int(step)}"

    def checkpoints(self, run: str, steps) -> dict[int, str]:
        """{step: model directory} of the checkpoints among `steps` (step 0 is pi_ref: none)."""
        return {int(s): self.checkpoint(run, s) for s in steps if int(s) > 0}

    def table(self, run: str, split: str, step: int, ext: str = "csv", temperature=None) -> str:
        """One evaluation table (temperature None: the evaluation temperature)."""
        tag = "" if temperature is None else f"_T{temp_tag(temperature)}"
        return f"{self.root}/evaluate/{run}/{split}/step_{int(step)}{tag}.{ext}"


@dataclass(frozen=True)
class GrpoRun:
    """A run of the default graph or of a replicate: one variant with one GRPO seed."""

    variant: str
    seed: int

    @property
    def name(self) -> str:
        return run_name(self.variant, self.seed)


def run_name(variant: str, seed: int) -> str:
    """The name (and path under train/ and evaluate/) of a variant's run with GRPO seed `seed`."""
    return f"{variant}/seed_{int(seed)}"


def grpo_runs(variants, seeds) -> dict[str, GrpoRun]:
    """Name -> run of every (variant, GRPO seed), variants outermost."""
    runs = [GrpoRun(v, int(s)) for v in variants for s in seeds]
    return {r.name: r for r in runs}


def replicate_variants(config: dict) -> list[str]:
    """The variants trained on each replicate of pi_ref: replicates.variants, or (null) the first
    of `variants`, so that narrowing `variants` needs no second edit."""
    chosen = config["replicates"]["variants"]
    return list(config["variants"][:1] if chosen is None else chosen)


def constraint(names) -> str:
    """A wildcard constraint matching exactly `names` (none: a pattern that matches nothing)."""
    names = sorted(names, key=len, reverse=True)  # the longest first: no name a prefix's victim
    return "|".join(map(re.escape, names)) or "(?!)"
