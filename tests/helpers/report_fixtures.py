"""Fabricated upstream outputs for the report stage (tests and development without a real run).

`make_results(root, config)` writes, with the exact structure of the real stages:
  results/evaluate/ref/{split}/step_0.{csv,json} and
  results/evaluate/{variant}/seed_{seed}/{split}/step_{N}.{csv,json} for every train.seeds seed,
  results/train/{variant}/seed_{seed}/train_log.csv and run.json (resolved config under "config"),
  results/data/splits.json, results/theory/derivations.{json,md};
  with fixed_point.compact set, the compact study's evaluation tables (pi_ref and every
  checkpoint on the pool) and KL tables (`fabricate_fixed_point`), from which its rules compute.
Success counts are binomial draws around p_k = sigma(logit p_ref + rate * k) (a slow, partial
amplification; each seed's rate differs a little); a fifth of the prompts have p_ref = 0 and
stay at 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit, logit

from grpo_repro import stats

RATES = {"grpo": 0.5, "mirror": 0.8, "dr_grpo": 0.3, "mirror_dr": 0.6}


def counts_table(prompt_ids, k, samples, k_lenient=None) -> pd.DataFrame:
    """An evaluation table (the columns the report reads, evaluate.scoring.PROMPT_COLUMNS) from `k` successes
    out of `samples` per prompt; lenient successes default to the strict ones."""
    k = np.asarray(k)
    k_len = k if k_lenient is None else np.asarray(k_lenient)
    lo, hi = stats.wilson(k, np.full_like(k, samples))
    return pd.DataFrame(
        {
            "prompt_id": prompt_ids,
            "successes": k,
            "samples": samples,
            "p_hat": k / samples,
            "ci_low": lo,
            "ci_high": hi,
            "successes_lenient": k_len,
            "p_hat_lenient": k_len / samples,
        }
    )


def eval_table(prompt_ids, p_true, samples, rng) -> pd.DataFrame:
    """Binomial draws around p_true (lenient: a tenth of the failures also pass)."""
    k = rng.binomial(samples, p_true)
    k_len = np.minimum(samples, k + rng.binomial(samples - k, 0.1))
    return counts_table(prompt_ids, k, samples, k_len)


def write_table(df: pd.DataFrame, path: Path, meta: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(path, index=False)
    path.with_suffix(".json").write_text(json.dumps(meta, indent=2))


def fabricate_temperature_tables(res, config, steps, n_prompts, samples, truth, rng) -> None:
    """The tables of eval.temperatures (grpo_repro.evaluate.tasks: pi_ref and each run's final
    checkpoint; greedy has one sample) not written yet, and the prompt files of their splits: a
    higher temperature lowers success a little, a run's success is above pi_ref's."""
    from grpo_repro.evaluate import tasks as ev_tasks

    runs = ["ref"] + [
        f"{v}/seed_{sd}" for v in config["variants"] for sd in config["train"]["seeds"]
    ]
    for run in runs:
        for task in ev_tasks.tasks(str(res), run, steps, config):
            path = Path(task.csv)
            if path.exists():
                continue
            split = task.split
            if split not in truth:
                n = n_prompts.get(split, 12)
                truth[split] = dict(zip([f"{split}-{i}" for i in range(n)], rng.beta(1.0, 2.0, n)))
            ids, p = list(truth[split]), np.array(list(truth[split].values()))
            t = 1.0 if task.temperature is None else task.temperature
            p = np.clip(p * (1.2 - 0.2 * t) + (0.2 if run != "ref" else 0.0), 0, 1)
            n_samples = 1 if t == 0 else samples
            meta = {"split": split, "samples": n_samples, "model": run, "step": task.step}
            write_table(eval_table(ids, p, n_samples, rng), path, meta)
    data = res / "data"
    data.mkdir(parents=True, exist_ok=True)
    for split in config["eval"].get("temperature_splits") or []:
        if split in truth and split != "train":
            lines = [
                json.dumps({"prompt_id": i, "prompt": f"q {i}", "gold": "1"}) for i in truth[split]
            ]
            (data / f"{split}.jsonl").write_text("\n".join(lines) + "\n")


def fabricate_fixed_point(res: Path, config: dict, rng) -> None:
    """The compact study's tables (grpo_repro.fixed_point.runs): success drawn around a logit path
    from p_ref that covers half the way to p*_G at each checkpoint, so its last two reach ~94%."""
    from grpo_repro.dynamics.prediction import orbit_limits
    from grpo_repro.fixed_point import runs as fp_runs
    from grpo_repro.runs import REF, Tree

    fp = config["fixed_point"]
    if not fp.get("compact"):
        return
    tree, g = Tree(str(res / "fixed_point")), config["train"]["num_generations"]
    ids = [f"train-{i}" for i in range(fp["n_prompts"])]
    p_ref = rng.uniform(0.1, 0.8, size=len(ids))
    meta = {"split": fp_runs.POOL, "scoring": "strict", "interval": "wilson95"}
    ref_n = fp["ref_samples"]
    write_table(eval_table(ids, p_ref, ref_n, rng), Path(tree.table(REF, fp_runs.POOL, 0)), meta)
    for run in fp_runs.study_runs(fp, fp_runs.COMPACT, g, config["train"]["two_kl_alpha"]):
        target = orbit_limits(p_ref, run.beta, config["train"]["smoothing_eps"], group_size=g)["a"]
        for k, step in enumerate(fp_runs.steps(fp, run), start=1):
            p = expit(logit(p_ref) + (1 - 0.5**k) * (logit(target) - logit(p_ref)))
            path = Path(tree.table(run.name, fp_runs.POOL, step))
            write_table(eval_table(ids, p, fp["compact"]["samples"], rng), path, meta)
        kl = pd.DataFrame({"prompt_id": ids, "kl": 0.05, "kl_se": 0.01})
        path = Path(fp_runs.kl_table(str(res / "fixed_point"), run.name))
        path.parent.mkdir(parents=True, exist_ok=True)
        kl.to_csv(path, index=False)


def make_results(root, config: dict, steps, n_prompts=None, samples=None, seed=0) -> dict:
    """Fabricate every input of the final stage under root/results; returns the true p_ref."""
    root = Path(root)
    res = root / "results"
    rng = np.random.default_rng(seed)
    samples = samples or config["eval"]["samples"]
    n_prompts = n_prompts or {"test": 30, "train": 20}
    truth = {}
    for split in config["eval"]["splits"]:
        n = n_prompts[split]
        ids = [f"{split}-{i}" for i in range(n)]
        p_ref = rng.beta(1.0, 2.0, size=n)
        p_ref[: max(1, n // 5)] = 0.0
        truth[split] = dict(zip(ids, p_ref))
        meta = {"split": split, "samples": samples, "scoring": "strict", "interval": "wilson95"}
        write_table(
            eval_table(ids, p_ref, samples, rng),
            res / "evaluate" / "ref" / split / "step_0.csv",
            {**meta, "model": "ref", "step": 0},
        )
        for v in config["variants"]:
            for sd in config["train"]["seeds"]:
                rate = RATES.get(v, 0.5) * (1 + 0.1 * sd)
                for k, step in enumerate(steps):
                    if step == 0:
                        continue
                    with np.errstate(divide="ignore"):
                        p = np.where(p_ref > 0, expit(logit(p_ref) + rate * k), 0.0)
                    write_table(
                        eval_table(ids, p, samples, rng),
                        res / "evaluate" / v / f"seed_{sd}" / split / f"step_{step}.csv",
                        {**meta, "model": v, "step": step},
                    )
    fabricate_temperature_tables(res, config, steps, n_prompts, samples, truth, rng)
    fabricate_fixed_point(res, config, rng)
    for v, sd in [(v, sd) for v in config["variants"] for sd in config["train"]["seeds"]]:
        d = res / "train" / v / f"seed_{sd}"
        d.mkdir(parents=True, exist_ok=True)
        s = np.arange(1, steps[-1] + 1)
        pd.DataFrame(
            {
                "step": s,
                "reward": np.linspace(0.3, 0.6, len(s)),
                "kl": np.linspace(0, 0.05, len(s)),
                "loss": np.linspace(0.01, 0.0, len(s)),
            }
        ).to_csv(d / "train_log.csv", index=False)
        (d / "run.json").write_text(
            json.dumps(
                {"stage": "train_grpo", "variant": v, "steps": list(steps), "config": config},
                indent=2,
            )
        )
    data = res / "data"
    data.mkdir(parents=True, exist_ok=True)
    stats = {s: {"n": len(truth[s]), "step_mix": [0.3, 0.4, 0.3]} for s in truth}
    (data / "splits.json").write_text(json.dumps(stats))
    theory = res / "theory"
    theory.mkdir(parents=True, exist_ok=True)
    recs = [
        {
            "id": f"claim_{i}",
            "claim": "c",
            "reference": "Thm 2",
            "method": "sympy",
            "kind": "claim",
            "passed": i != 3,
            "detail": "",
        }
        for i in range(10)
    ]
    recs += [
        {
            "id": f"erratum_{i}",
            "claim": "e",
            "reference": "Sec. 2",
            "method": "sympy",
            "kind": "erratum",
            "passed": True,
            "detail": "",
        }
        for i in range(3)
    ]
    (theory / "derivations.json").write_text(json.dumps(recs, indent=2))
    (theory / "derivations.md").write_text("# derivations\n")
    return truth
