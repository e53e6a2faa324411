"""What a run will do and cost, before it starts (Sec. 6 at the configuration's sizes): per stage the
optimizer steps, checkpoints, completions sampled, tokens, checkpoint disk and GPU-hours, computed
from the configuration by the functions that schedule the run (grpo_repro.train.run_settings, the
evaluation tasks of grpo_repro.evaluate.tasks, the run tables of grpo_repro.runs and
grpo_repro.fixed_point.runs, the `gpu` resources of grpo_repro.gpus), and a throughput table.

    python -m grpo_repro.plan --configfile config/paper.yaml [overlays] [--throughput FILE]

The throughput table (THROUGHPUT, a JSON file that workflow/benchmarks/gpu_paper_scale.py writes on a
GPU) gives seconds per optimizer step at one device's share of a step and evaluation tokens per
second on one GPU; each figure says whether it was measured (and where) or is an assumption, and
the plan marks every cost it derives from an assumption. Tokens are upper bounds: every completion
at its length limit.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

THROUGHPUT = Path(__file__).resolve().parents[2] / "resources" / "gpu_throughput.json"
FLOAT32 = 4  # bytes per parameter of a saved checkpoint (float32 master weights)
TRL_STATE = 4  # a TRL checkpoint: weights, Adam's two moments, gradients' scale: ~4x the weights


@dataclass
class Stage:
    """One line of the plan: a stage's work and cost."""

    name: str
    runs: int = 0
    steps: int = 0
    checkpoints: int = 0
    completions: int = 0
    tokens: int = 0
    disk_gb: float = 0.0
    gpu_hours: float = 0.0
    assumed: bool = False
    on_gpu: bool = True  # False: a CPU configuration, whose cost the table does not estimate


def _split_prompts(config: dict, sizes: dict | None) -> dict[str, int]:
    """Prompts of each evaluation split: test, the tracked training pool (`train`), val."""
    from grpo_repro.data.sizes import training_size

    data = config["data"]
    test = data["n_test"] if data["n_test"] is not None else sizes["test"]
    train = training_size(config, sizes)
    pool = train if data["train_pool"] is None else min(data["train_pool"], train)
    return {"test": int(test), "train": int(pool), "val": int(data["n_val"] or 0)}


def _eval_work(tasks, prompts: dict, ecfg: dict) -> tuple[int, int]:
    """(completions, tokens) of evaluation tasks: prompts x samples per table (greedy: one)."""
    from grpo_repro.evaluate.run import task_samples

    completions = 0
    for t in tasks:
        temp = 1.0 if t.temperature is None else float(t.temperature)
        completions += prompts[t.split] * task_samples(ecfg, t.split, temp)
    return completions, completions * int(ecfg["max_new_tokens"])


def _train_stage(name, train: dict, n_prompts: int, runs: int, gpus: int, rate, params) -> Stage:
    """The training of `runs` GRPO runs of `train` settings over `n_prompts` prompts."""
    from grpo_repro.train.run_settings import checkpoint_steps

    steps = checkpoint_steps(train, n_prompts)
    total = steps[-1]
    batches = math.ceil(total / train["num_iterations"])
    completions = batches * train["prompts_per_step"] * train["num_generations"]
    stage = Stage(name, runs, total * runs, (len(steps) - 1) * runs, completions * runs)
    stage.tokens = stage.completions * train["max_completion_length"]
    if params:
        stage.disk_gb = runs * (len(steps) - 1 + TRL_STATE) * params * FLOAT32 / 1e9
    per_device = train["prompts_per_step"] * train["num_generations"] / train["devices"]
    share = per_device * train["max_completion_length"] / rate["completion_tokens_per_step"]
    stage.gpu_hours = runs * total * rate["seconds_per_step"] * share * gpus / 3600
    stage.assumed = not rate.get("measured", False)
    return stage


def _eval_stage(name, completions: int, tokens: int, rate, runs: int) -> Stage:
    stage = Stage(name, runs, completions=completions, tokens=tokens)
    stage.gpu_hours = tokens / rate["tokens_per_s"] / 3600
    stage.assumed = not rate.get("measured", False)
    return stage


def plan(config: dict, throughput: dict, sizes: dict | None = None) -> list[Stage]:
    """The stages of the configuration's graph that run models, with their work and cost."""
    from grpo_repro.fixed_point import runs as fp_runs
    from grpo_repro.gpus import job_gpus
    from grpo_repro.runs import REF
    from grpo_repro.train.run_settings import grpo_run
    from grpo_repro.workflow_plan import Plan

    P = Plan(config, sizes)  # the workflow's own runs, steps and evaluation tasks
    train_rate, eval_rate = throughput["train"], throughput["eval"]
    same_model = throughput.get("model") == config["model"]["name_or_path"]
    params = throughput.get("parameters") if same_model else None
    prompts = _split_prompts(config, sizes)
    first = P.run_table[P.runs[0]]
    train = grpo_run(config, first.variant, first.seed).train.as_dict()
    gpus = job_gpus(config, "train") or 1  # the training job's `gpu` resource (1: a CPU's)
    n_runs = len(P.runs)
    stages = [_train_stage("train", train, P.n_epoch_prompts, n_runs, gpus, train_rate, params)]
    work = [_eval_work(P.eval_tasks(r), prompts, config["eval"]) for r in [REF, *P.runs]]
    stages.append(
        _eval_stage(
            "evaluate", sum(c for c, _ in work), sum(t for _, t in work), eval_rate, n_runs + 1
        )
    )
    if fp_runs.COMPACT in P.fp_studies:
        stages += _compact(config, P.fp, train_rate, eval_rate, gpus, params)
    for stage in stages:
        stage.on_gpu = bool(job_gpus(config, "eval"))
    return stages


def _compact(config, fp, train_rate, eval_rate, gpus, params) -> list[Stage]:
    """The compact fixed-point study: its training runs, pool evaluations and KL samples."""
    from grpo_repro.fixed_point import runs as fp_runs
    from grpo_repro.train.run_settings import grpo_run

    runs = fp_runs.study_runs(fp, fp_runs.COMPACT, config["train"]["num_generations"])
    run = runs[0]
    over = fp_runs.train_overrides(fp, run)
    train = grpo_run(config, run.variant, run.seed, train_overrides=over).train.as_dict()
    stage = _train_stage(
        "fixed_point train", train, fp["n_prompts"], len(runs), gpus, train_rate, params
    )
    n, length = fp["n_prompts"], config["eval"]["max_new_tokens"]
    steps = fp_runs.steps(fp, run)
    completions = n * fp["ref_samples"] + len(runs) * (
        n * fp[fp_runs.COMPACT]["samples"] * len(steps) + n * fp["kl_samples"]
    )
    # pi_ref's pool, every checkpoint's, the KL's samples of the last checkpoint
    evals = _eval_stage("fixed_point evaluate", completions, completions * length, eval_rate, 1)
    return [stage, evals]


def table(stages: list[Stage], throughput: dict) -> str:
    """The plan as a Markdown table, then where its throughput figures come from."""
    head = "| stage | runs | optimizer steps | checkpoints | completions | tokens (at most) | checkpoint disk | GPU-hours |"
    rows = [head, "|" + "---|" * 8]
    for s in stages:
        cost = f"{s.gpu_hours:.1f}" + (" (assumed rate)" if s.assumed else "")
        cost = cost if s.on_gpu else "- (a CPU run)"
        disk = f"{s.disk_gb:.0f} GB" if s.disk_gb else "-"
        rows.append(
            f"| {s.name} | {s.runs} | {s.steps or '-'} | {s.checkpoints or '-'} | "
            f"{s.completions:,} | {s.tokens:,} | {disk} | {cost} |"
        )
    total = sum(s.gpu_hours for s in stages if s.on_gpu)
    rows.append(f"| **total** | | | | | | | **{total:.1f}** |")
    out = "\n".join(rows)
    for key in ("train", "eval"):
        r = throughput[key]
        origin = f"measured on {r['device']}" if r.get("measured") else "ASSUMPTION, not measured"
        out += f"\n- {key} rate: {r['figure']} ({origin}; {r['source']})"
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse

    from grpo_repro import config as cfg
    from grpo_repro.data.sizes import check_sizes

    ap = argparse.ArgumentParser(prog="python -m grpo_repro.plan", description=__doc__)
    ap.add_argument("--configfile", nargs="+", default=[], help="as snakemake's --configfile")
    ap.add_argument("--throughput", default=str(THROUGHPUT), help="the throughput table (JSON)")
    a = ap.parse_args(argv)
    try:
        config = cfg.load(*a.configfile)
        sizes = check_sizes(config, cfg.compose(a.configfile), check_hub=False)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 1
    throughput = json.loads(Path(a.throughput).read_text())
    data = config["data"]
    print(
        f"# Plan: {' + '.join(map(str, cfg.compose(a.configfile)))}\n\n"
        f"model {config['model']['name_or_path'] or 'organism (built)'}; data {data['source']} "
        f"({', '.join(f'{k} {v}' for k, v in _split_prompts(config, sizes).items())} prompts); "
        f"variants {', '.join(config['variants'])} x seeds {config['train']['seeds']}\n"
    )
    print(table(plan(config, throughput, sizes), throughput))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
