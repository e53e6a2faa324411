"""The work list of one evaluation job (Sec. 6; the sharpening baseline of the held-out headline).

One job evaluates one run: every checkpoint of the run at the evaluation temperature
(eval.temperature, default the training one) on every split of eval.splits, and the run's final
checkpoint at each temperature of eval.temperatures on every split of eval.temperature_splits
(pi_ref, run `ref`, has step 0 only). Temperature 0 is greedy decoding: one sample per prompt.

Paths (grpo_repro.runs.Tree.table): results/evaluate/{run}/{split}/step_{N}.csv at the evaluation
temperature (the tables of the trajectories and the paper's headline) and step_{N}_T{t}.csv at
another temperature t, each with its .json sidecar.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from grpo_repro.runs import REF, Tree


def main_temperature(config: dict) -> float:
    """eval.temperature, or train.temperature when it is null."""
    t = config["eval"]["temperature"]
    return float(config["train"]["temperature"] if t is None else t)


def temperatures(config: dict) -> list[float]:
    """Every temperature of the temperature curve, the evaluation temperature first."""
    main = main_temperature(config)
    extra = [float(t) for t in config["eval"].get("temperatures") or [] if float(t) != main]
    return [main, *dict.fromkeys(extra)]


@dataclass(frozen=True)
class Task:
    """One table: a checkpoint (step) on one split at one temperature (None = the evaluation one)."""

    step: int
    split: str
    temperature: float | None
    csv: str
    json: str

    def as_dict(self) -> dict:
        return asdict(self)


def tasks(results: str, run: str, steps, config: dict) -> list[Task]:
    """Every table of one run's evaluation job, in the order they are computed."""
    splits = list(config["eval"]["splits"])
    temps = temperatures(config)
    t_splits = list(config["eval"].get("temperature_splits") or []) if len(temps) > 1 else []
    steps = [0] if run == REF else sorted(int(s) for s in steps if int(s) > 0)
    out = [(s, split, None) for s in steps for split in splits]
    final = steps[-1]
    for split in t_splits:
        if split not in splits:
            out.append((final, split, None))
        out += [(final, split, t) for t in temps[1:]]
    tree = Tree(results)
    return [
        Task(s, split, t, tree.table(run, split, s, "csv", t), tree.table(run, split, s, "json", t))
        for s, split, t in out
    ]


def task_splits(config: dict) -> list[str]:
    """Every split an evaluation job reads."""
    t_splits = (
        config["eval"].get("temperature_splits") or [] if len(temperatures(config)) > 1 else []
    )
    return list(dict.fromkeys([*config["eval"]["splits"], *t_splits]))
