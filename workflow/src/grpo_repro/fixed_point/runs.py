"""Names of the fixed-point stage's GRPO runs (Thm 2-3 tested in training): one run per run kind
(`fixed_point.runs`, "variant/kl_estimator") and beta, at results/fixed_point/train/<name>, with
<name> = {variant}_{kl}/beta_{beta}/seed_{seed}."""

from __future__ import annotations

from grpo_repro.evaluate.tasks import Task


def run_names(kinds: list[str], betas: list[float], seed: int) -> list[str]:
    """Every run of the sweep, kinds outer, betas inner."""
    return [f"{'_'.join(k.split('/'))}/beta_{b:g}/seed_{seed}" for k in kinds for b in betas]


def parse(name: str) -> tuple[str, float, int]:
    """(kind `{variant}_{kl}`, beta, seed) of a run name."""
    kind, beta, seed = name.split("/")
    return kind, float(beta.removeprefix("beta_")), int(seed.removeprefix("seed_"))


def train_settings(base: dict, fp: dict, beta: float, kl: str) -> dict:
    """What one run's training reads: `base` (the default runs' training settings: seed, train,
    data) with the run's beta and KL estimator and the sweep's steps, learning rate and seed,
    on the pool (many epochs)."""
    train = {
        **base["train"],
        "beta": beta,
        "kl_estimator": kl,
        "learning_rate": fp["learning_rate"],
        "max_steps": fp["max_steps"],
        "save_steps": fp["save_steps"],
        "on_pool": True,
        "seeds": [fp["seed"]],
    }
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


def table_paths(fp_dir: str, names: list[str], steps: list[int]) -> dict:
    """Evaluation table of pi_ref (key `ref`) and of every run at every step (key `run@step`)."""
    out = {"ref": f"{fp_dir}/evaluate/ref/pool/step_0.csv"}
    for name in names:
        for step in steps:
            out[f"{name}@{step}"] = f"{fp_dir}/evaluate/{name}/pool/step_{step}.csv"
    return out
