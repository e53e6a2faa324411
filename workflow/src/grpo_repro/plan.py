"""What a run will do and cost, before it starts (Sec. 6 at the configuration's sizes): every job the
graph schedules, per rule; for each job that runs a model its GPUs, its work (optimizer steps,
checkpoints, completions, tokens), its hours and its memory model beside the GPU's
(grpo_repro.memory); per stage the totals and checkpoint disk; and one GPU node's schedule: its
wall-clock, the GPU-hours it holds and those its jobs use. Everything is computed by the code that
schedules the run (grpo_repro.workflow_plan.Plan: its runs, steps and evaluation tasks, the
fixed-point and zero-success runs; grpo_repro.gpus: each job's `gpu` resource and priority).

    python -m grpo_repro.plan --configfile config/paper.yaml [overlays] [--throughput FILE]
                              [--node-gpus 8]

The throughput table (THROUGHPUT, a JSON file that workflow/benchmarks/gpu_paper_scale.py writes on a
GPU) gives seconds per optimizer step at one device's share of a step and evaluation tokens per
second on one GPU; each figure says whether it was measured (and where) or is an assumption, and
the plan marks every cost it derives from an assumption. Tokens are upper bounds: every completion
at its length limit; the zero study's screen and confirmation at zero.max_candidates per split.

The node: `node_gpus` GPUs (workflow/profiles/gpu_node's `gpu` resource), jobs started as
Snakemake's scheduler starts them, highest priority first among the jobs ready and fitting in the
free GPUs (`schedule`); "before" replays the same jobs with the training's priority at 0, where a
scheduler that starts as many jobs as fit (Snakemake's default ILP) starts the 1-GPU jobs first.
On SLURM no node is held: each job holds its own GPUs for its hours.
"""

from __future__ import annotations

import json
import math
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

THROUGHPUT = Path(__file__).resolve().parents[2] / "resources" / "gpu_throughput.json"
FLOAT32 = 4  # bytes per parameter of a saved checkpoint (float32 master weights)
TRL_STATE = 4  # a TRL checkpoint: weights, Adam's two moments, gradients' scale: ~4x the weights
NODE_GPUS = 8  # the paper's node: 7 training GPUs and one vLLM server


@dataclass(kw_only=True)
class Work:
    """The work of a job or a stage: optimizer steps, checkpoints, completions and tokens sampled
    (at most), checkpoint disk, and whether its cost rests on an assumed rate."""

    steps: int = 0
    checkpoints: int = 0
    completions: int = 0
    tokens: int = 0
    disk_gb: float = 0.0
    assumed: bool = False


@dataclass
class Job(Work):
    """One job of the graph: its rule and wildcards; a job that runs a model also its GPUs, work,
    hours on those GPUs, memory per GPU, the jobs it waits for and its priority."""

    rule: str
    name: str = ""  # the {run} wildcard, or "" for a rule of one job
    stage: str = ""  # the plan's stage line ("" for a job that runs no model)
    gpus: int = 0
    hours: float = 0.0  # wall hours on its GPUs
    memory: list = field(default_factory=list)  # grpo_repro.memory.Estimate per kind of GPU
    after: tuple = ()  # keys of the model jobs it waits for
    priority: int = 0

    @property
    def key(self) -> str:
        return f"{self.rule}[{self.name}]" if self.name else self.rule

    @property
    def gpu_hours(self) -> float:
        return self.hours * max(self.gpus, 1)


@dataclass
class Stage(Work):
    """One line of the plan: a stage's work and cost (its jobs' sums)."""

    name: str
    runs: int = 0
    gpu_hours: float = 0.0
    on_gpu: bool = True  # False: a CPU configuration, whose cost the table does not estimate


def _split_prompts(config: dict, sizes: dict | None) -> dict[str, int]:
    """Prompts of each evaluation split: test, the tracked training pool (`train`), val."""
    from grpo_repro.data.sizes import training_size

    data = config["data"]
    test = data["n_test"] if data["n_test"] is not None else sizes["test"]
    train = training_size(config, sizes)
    pool = train if data["train_pool"] is None else min(data["train_pool"], train)
    return {"test": int(test), "train": int(pool), "val": int(data["n_val"] or 0)}


class Planner:
    """The jobs of one configuration (`jobs`), priced with a throughput table."""

    def __init__(self, config: dict, throughput: dict, sizes: dict | None = None):
        from grpo_repro import memory
        from grpo_repro.gpus import job_gpus
        from grpo_repro.workflow_plan import Plan

        self.config, self.sizes = config, sizes
        self.P = Plan(config, sizes)  # the workflow's own runs, steps and evaluation tasks
        self.train_rate, self.eval_rate = throughput["train"], throughput["eval"]
        same_model = throughput.get("model") == config["model"]["name_or_path"]
        self.params = throughput.get("parameters") if same_model else None
        self.prompts = _split_prompts(config, sizes)
        on_gpu = bool(job_gpus(config, "eval"))
        self.shape = memory.model_shape(config["model"]) if on_gpu else None
        self.device = memory.device_bytes(config)
        self.length = int(config["eval"]["max_new_tokens"])

    # --- pricing
    def train_job(self, rule, name, run, n_prompts, after=(), stage="train", priority=None) -> Job:
        """A GRPO training job of `run` (a GRPORun) over `n_prompts` prompts (priority: the
        rule's, default the training's, grpo_repro.gpus.TRAIN_PRIORITY)."""
        from grpo_repro import memory
        from grpo_repro.gpus import TRAIN_PRIORITY, job_gpus
        from grpo_repro.train.run_settings import checkpoint_steps

        train = run.sections["train"]
        steps = checkpoint_steps(train, n_prompts)
        total = steps[-1]
        batches = math.ceil(total / train["num_iterations"])
        completions = batches * train["prompts_per_step"] * train["num_generations"]
        per_device = train["prompts_per_step"] * train["num_generations"] / train["devices"]
        share = (
            per_device
            * train["max_completion_length"]
            / self.train_rate["completion_tokens_per_step"]
        )
        job = Job(rule, name, stage, job_gpus(run.sections, "train"), after=tuple(after))
        job.steps, job.checkpoints = total, len(steps) - 1
        job.completions, job.tokens = completions, completions * train["max_completion_length"]
        if self.params:
            job.disk_gb = (len(steps) - 1 + TRL_STATE) * self.params * FLOAT32 / 1e9
        job.hours = total * self.train_rate["seconds_per_step"] * share / 3600
        job.assumed = not self.train_rate.get("measured", False)
        job.priority = TRAIN_PRIORITY if priority is None else priority
        if self.shape is not None:
            tokens = memory.seq_tokens(self.config, train["max_completion_length"])
            job.memory = [memory.train_process(train, self.shape, tokens, self.device)]
            if job.gpus > train["devices"]:  # train.vllm_mode server: one more GPU
                job.memory.append(memory.vllm_server(self.device))
        return job

    def sample_job(
        self, rule, name, completions, samples, after=(), stage="evaluate", kind="eval"
    ) -> Job:
        """A job of `kind` (grpo_repro.gpus.JOB_KINDS: eval or kl) that samples `completions`,
        `samples` per prompt at once."""
        from grpo_repro import memory
        from grpo_repro.gpus import job_gpus

        job = Job(rule, name, stage, job_gpus(self.config, kind), after=tuple(after))
        job.completions, job.tokens = completions, completions * self.length
        job.hours = job.tokens / self.eval_rate["tokens_per_s"] / 3600
        job.assumed = not self.eval_rate.get("measured", False)
        if self.shape is not None:
            tokens = memory.seq_tokens(self.config, self.length)
            est = (
                memory.kl_job(samples, self.shape, tokens, self.device)
                if kind == "kl"
                else memory.evaluation(
                    self.config["eval"], self.config["train"], samples, self.shape, tokens,
                    self.device,
                )
            )  # fmt: skip
            job.memory = [est]
        return job

    def eval_completions(self, run: str) -> int:
        """Completions of one run's evaluation job: prompts x samples of every table."""
        from grpo_repro.evaluate.run import task_samples

        out = 0
        for t in self.P.eval_tasks(run):
            temp = 1.0 if t.temperature is None else float(t.temperature)
            out += self.prompts[t.split] * task_samples(self.config["eval"], t.split, temp)
        return out

    # --- the graph
    def jobs(self) -> list[Job]:
        """Every job of the configuration's default target (the graph `snakemake` runs), model
        jobs first, in the stages' order."""
        from grpo_repro.runs import REF

        P, samples = self.P, self.config["eval"]["samples"]
        train = [self.train_job("train_grpo", r, P.grpo_run(r), P.n_epoch_prompts) for r in P.runs]
        out = list(train)
        out.append(self.sample_job("evaluate_reference", "", self.eval_completions(REF), samples))
        for r, t in zip(P.runs, train, strict=True):
            out.append(
                self.sample_job("evaluate_run", r, self.eval_completions(r), samples, [t.key])
            )
        out += self.fixed_point_jobs()
        out += self.zero_jobs([t.key for t in train])
        return out + self.cpu_jobs()

    def fixed_point_jobs(self) -> list[Job]:
        """The compact fixed-point study (fixed_point.compact): its training runs, pi_ref's and
        the runs' pool evaluations, the KL of each run's last checkpoint."""
        from grpo_repro.fixed_point import runs as fp_runs
        from grpo_repro.gpus import FP_TRAIN_PRIORITY

        P, fp = self.P, self.P.fp
        if not P.fp_compact:
            return []
        n, stage = fp["n_prompts"], "fixed_point evaluate"
        ref_k, kl_k, k = fp["ref_samples"], fp["kl_samples"], fp[fp_runs.COMPACT]["samples"]
        out = [self.sample_job("fixed_point_evaluate_ref", "", n * ref_k, ref_k, stage=stage)]
        for name in P.fp_compact:
            t = self.train_job(
                "fixed_point_train", name, P.fp_run(name), n, stage="fixed_point train",
                priority=FP_TRAIN_PRIORITY,
            )  # fmt: skip
            steps = fp_runs.steps(fp, P.fp_table[name])
            after = dict(after=[t.key], stage=stage)
            ev = self.sample_job(
                "fixed_point_evaluate_compact", name, n * k * len(steps), k, **after
            )
            kl = self.sample_job("fixed_point_kl", name, n * kl_k, kl_k, **after, kind="kl")
            out += [t, ev, kl]
        return out

    def zero_jobs(self, trained: list[str]) -> list[Job]:
        """The zero-success study (config `zero`): screen and confirm, the control run, the
        measurement of pi_ref, every checkpoint and the control on the zeros."""
        from grpo_repro.data.sizes import training_size

        z = self.config["zero"]
        if not z:
            return []
        ecfg, P = self.config["eval"], self.P
        train_n = training_size(self.config, self.sizes)
        screened = min(z["screen_train"] or train_n, train_n)
        if self.config["data"]["source"] == "organism":
            screened += z["extra_held_out"]
        # candidates: at most max_candidates per split (held-out, training), at most those screened
        cap = z["max_candidates"]
        cands = min(2 * cap, screened + self.prompts["test"]) if cap else screened
        ref = self.sample_job(
            "zero_reference", "", screened * ecfg["samples"] + cands * z["samples"], z["samples"],
            ["evaluate_reference"], stage="zero",
        )  # fmt: skip
        # one GPU beside the others: Snakemake's default priority (grpo_repro.gpus: training only)
        control = self.train_job(
            "zero_control", "", P.zero_control_run(), P.n_epoch_prompts, [ref.key], "zero", 0
        )
        # per zero: pi_ref (zero.samples); each run and the control: eval.samples at every
        # checkpoint before the last, zero.samples at the last
        per_run = (len(P.steps) - 1) * ecfg["samples"] + z["samples"]
        per_zero = z["samples"] + (len(P.runs) + 1) * per_run
        measure = self.sample_job(
            "zero_measure", "", cands * per_zero, z["samples"], [ref.key, control.key, *trained],
            stage="zero",
        )  # fmt: skip
        return [ref, control, measure]

    def cpu_jobs(self) -> list[Job]:
        """The jobs that run no model: theory, figures, data, report, the compact study's and the
        zero study's tables and pictures, and the target `all`."""
        from grpo_repro.figures.registry import FAMILIES

        P = self.P
        rules = ["theory_derivations", "data_prepare", "all", *P.report_compute]
        rules += [f"figures_{kind}_{fam.name}" for fam in FAMILIES for kind in ("data", "plot")]
        for plot in P.report_plots:
            rules += [f"report_plot_{plot.name}"] * (len(P.splits) if plot.per_split else 1)
        if P.fp_compact:
            rules += [f"fixed_point_{r}" for r in ("pool", "compare", "plot", "resolution")]
        if self.config["zero"]:
            rules += ["zero_summary", "zero_plot"]
        return [Job(r) for r in rules]


def jobs(config: dict, throughput: dict, sizes: dict | None = None) -> list[Job]:
    """Every job of the configuration's graph (Planner.jobs)."""
    return Planner(config, throughput, sizes).jobs()


STAGES = ["train", "evaluate", "fixed_point train", "fixed_point evaluate", "zero"]


def stages(all_jobs: list[Job], on_gpu: bool = True) -> list[Stage]:
    """Per stage the sums of its model jobs (a training stage: its runs)."""
    out = []
    for name in STAGES:
        js = [j for j in all_jobs if j.stage == name]
        if not js:
            continue
        s = Stage(name, runs=sum(1 for j in js if j.steps) or len(js), on_gpu=on_gpu)
        s.steps, s.checkpoints = sum(j.steps for j in js), sum(j.checkpoints for j in js)
        s.completions, s.tokens = sum(j.completions for j in js), sum(j.tokens for j in js)
        s.disk_gb = sum(j.disk_gb for j in js)
        s.gpu_hours, s.assumed = sum(j.gpu_hours for j in js), any(j.assumed for j in js)
        out.append(s)
    return out


def plan(config: dict, throughput: dict, sizes: dict | None = None) -> list[Stage]:
    """The stages of the configuration's graph that run models, with their work and cost."""
    from grpo_repro.gpus import job_gpus

    return stages(jobs(config, throughput, sizes), on_gpu=bool(job_gpus(config, "eval")))


@dataclass
class Node:
    """One GPU node's schedule of the model jobs: when each starts, the node's wall-clock, the
    GPU-hours it holds (all its GPUs, start to end) and those its jobs use."""

    gpus: int
    start: dict  # job key -> start hour
    wall: float

    @property
    def held(self) -> float:
        return self.gpus * self.wall

    def used(self, all_jobs: list[Job]) -> float:
        return sum(j.gpu_hours for j in all_jobs if j.key in self.start)

    def idle(self, all_jobs: list[Job]) -> float:
        return self.held - self.used(all_jobs)


def schedule(all_jobs: list[Job], node_gpus: int = NODE_GPUS, priorities: bool = True) -> Node:
    """The model jobs on one node of `node_gpus` GPUs, started as a scheduler starts them: whenever
    GPUs free up, the ready jobs (every job they wait for finished) in order of priority, each that
    fits in the free GPUs. priorities False (the graph before the training had one): every job at
    priority 0, the 1-GPU jobs first, as a scheduler maximising the jobs started at once does."""
    model = [j for j in all_jobs if j.gpus]
    if any(j.gpus > node_gpus for j in model):
        big = max(model, key=lambda j: j.gpus)
        raise ValueError(f"{big.key} needs {big.gpus} GPUs, the node has {node_gpus}")
    order = {j.key: i for i, j in enumerate(model)}

    def rank(j):
        return (-j.priority, order[j.key]) if priorities else (j.gpus, order[j.key])

    start, end, running, now, free = {}, {}, [], 0.0, node_gpus
    while len(start) < len(model):
        ready = [
            j for j in model if j.key not in start and all(end.get(a, 1e18) <= now for a in j.after)
        ]
        for j in sorted(ready, key=rank):
            if j.gpus <= free:
                start[j.key], end[j.key] = now, now + j.hours
                running.append(j)
                free -= j.gpus
        if not running:
            raise ValueError("no job can start: a job waits for one that is not in the graph")
        now = min(end[j.key] for j in running)
        for j in [j for j in running if end[j.key] <= now]:
            running.remove(j)
            free += j.gpus
    return Node(node_gpus, start, max(end.values(), default=0.0))


def table(stage_lines: list[Stage], throughput: dict) -> str:
    """The plan as a Markdown table, then where its throughput figures come from."""
    head = "| stage | runs | optimizer steps | checkpoints | completions | tokens (at most) | checkpoint disk | GPU-hours |"
    rows = [head, "|" + "---|" * 8]
    for s in stage_lines:
        cost = f"{s.gpu_hours:.1f}" + (" (assumed rate)" if s.assumed else "")
        cost = cost if s.on_gpu else "- (a CPU run)"
        disk = f"{s.disk_gb:.0f} GB" if s.disk_gb else "-"
        rows.append(
            f"| {s.name} | {s.runs} | {s.steps or '-'} | {s.checkpoints or '-'} | "
            f"{s.completions:,} | {s.tokens:,} | {disk} | {cost} |"
        )
    total = sum(s.gpu_hours for s in stage_lines if s.on_gpu)
    rows.append(f"| **total** | | | | | | | **{total:.1f}** |")
    out = "\n".join(rows)
    for key in ("train", "eval"):
        r = throughput[key]
        origin = f"measured on {r['device']}" if r.get("measured") else "ASSUMPTION, not measured"
        out += f"\n- {key} rate: {r['figure']} ({origin}; {r['source']})"
    return out


def job_table(all_jobs: list[Job], node: Node | None) -> str:
    """Per model job: its GPUs, hours, GPU-hours held (on SLURM: its own GPUs for its hours), its
    start on the node, and its memory model per GPU; then the jobs that run no model, per rule."""
    rows = [
        "| job | GPUs | hours | GPU-hours held | starts on the node (h) | memory per GPU |",
        "|---|---|---|---|---|---|",
    ]
    for j in (j for j in all_jobs if j.gpus):
        mem = "; ".join(e.line() for e in j.memory) or "-"
        at = f"{node.start[j.key]:.1f}" if node else "-"
        rows.append(f"| {j.key} | {j.gpus} | {j.hours:.2f} | {j.gpu_hours:.1f} | {at} | {mem} |")
    cpu = Counter(j.rule for j in all_jobs if not j.gpus)
    listed = ", ".join(f"{r} x{n}" if n > 1 else r for r, n in cpu.items())
    return "\n".join(rows) + f"\n\nJobs that run no model ({sum(cpu.values())}): {listed}"


def node_lines(all_jobs: list[Job], node: Node) -> str:
    """The node's wall-clock, GPU-hours held, used and idle, with the training's priority (`node`,
    schedule's) and without it (module docstring)."""
    out = [f"One node of {node.gpus} GPUs (workflow/profiles/gpu_node):"]
    before = schedule(all_jobs, node.gpus, priorities=False)
    for label, n in (("training first (priority)", node), ("before: no priority", before)):
        out.append(
            f"- {label}: wall-clock {n.wall:.1f} h; GPU-hours held {n.held:.1f}, used "
            f"{n.used(all_jobs):.1f}, idle {n.idle(all_jobs):.1f}"
        )
    out.append("- on SLURM no node is held: each job holds its own GPUs (column GPU-hours held)")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    import argparse

    from grpo_repro import config as cfg
    from grpo_repro.data.sizes import check_sizes

    ap = argparse.ArgumentParser(prog="python -m grpo_repro.plan", description=__doc__)
    ap.add_argument("--configfile", nargs="+", default=[], help="as snakemake's --configfile")
    ap.add_argument("--throughput", default=str(THROUGHPUT), help="the throughput table (JSON)")
    ap.add_argument("--node-gpus", type=int, default=NODE_GPUS, help="GPUs of one node")
    a = ap.parse_args(argv)
    try:
        config = cfg.load(*a.configfile)
        sizes = check_sizes(config, cfg.compose(a.configfile), check_hub=False)
        throughput = json.loads(Path(a.throughput).read_text())
        all_jobs = jobs(config, throughput, sizes)
        on_gpu = any(j.gpus for j in all_jobs)
        node = schedule(all_jobs, a.node_gpus) if on_gpu else None
    except ValueError as err:
        print(err, file=sys.stderr)
        return 1
    data = config["data"]
    print(
        f"# Plan: {' + '.join(map(str, cfg.compose(a.configfile)))}\n\n"
        f"model {config['model']['name_or_path'] or 'organism (built)'}; data {data['source']} "
        f"({', '.join(f'{k} {v}' for k, v in _split_prompts(config, sizes).items())} prompts); "
        f"variants {', '.join(config['variants'])} x seeds {config['train']['seeds']}\n"
    )
    print(table(stages(all_jobs, on_gpu), throughput))
    print(f"\n## Jobs ({len(all_jobs)})\n\n{job_table(all_jobs, node)}")
    if node is not None:
        print(f"\n## The node\n\n{node_lines(all_jobs, node)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
