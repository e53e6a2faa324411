"""Shared pieces of the training benchmarks (workflow/benchmarks/bench_train.py; Sec. 6 experiment,
the fast GRPO step of grpo_repro.train.fast): the pi_ref and prompts to benchmark on, GRPO trainers
built as grpo_repro.train.grpo.train builds them, and wall-clock timers around TRL's methods.

Components of a GRPO optimizer step (averaged over the measured steps):
  generation    _generate_single_turn (TRL: model.generate; fast: the batched sampler)
  reward        _calculate_rewards
  old_logps     _get_per_token_logps_and_entropies(policy) under no_grad (mu > 1; fast: deferred)
  ref_logps     _get_per_token_logps_and_entropies(reference) under no_grad (beta > 0)
  bookkeeping   rest of _generate_and_score_completions + _prepare_inputs (padding, metrics,
                advantages, shuffle/split of the generation batch)
  forward       _get_per_token_logps_and_entropies with grad (the loss's forward)
  loss          rest of compute_loss (loss arithmetic, KL, clip metrics)
  backward      accelerator.backward
  optimizer     clip_grad_norm_ + optimizer.step
  other         the rest of the step (Trainer loop, zero_grad, scheduler, callbacks, logging)
"""

from __future__ import annotations

import os
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

ROOT = Path(__file__).resolve().parents[2]
PIPELINE_REF = ROOT / "results" / "train" / "ref" / "model"
CACHE = ROOT / "results" / "benchmarks_cache"

GENERATION_PHASE = ["generation", "reward", "old_logps", "ref_logps", "bookkeeping"]
LOSS_PHASE = ["forward", "loss", "backward", "optimizer", "other"]
COMPONENTS = [*GENERATION_PHASE, *LOSS_PHASE]


def header(description: str) -> None:
    """The command line, then what the run measures."""
    print("$ " + " ".join([Path(sys.executable).name, *sys.argv]))
    print(description, flush=True)


def load_config(prompts_per_step=8, num_generations=8, **train_over) -> dict:
    """config/config.yaml with the GRPO batch (prompts per step x G) and other train keys set."""
    from grpo_repro import config as cfg

    config = cfg.load(ROOT / "config" / "config.yaml")
    config["train"].update(
        prompts_per_step=prompts_per_step, num_generations=num_generations, **train_over
    )
    return config


#: data_prepare's files (grpo_repro.workflow_plan.Plan.data_files) the benchmarks read
DATA_FILES = {
    "train": "train.jsonl",
    "test": "test.jsonl",
    "pool": "train_pool.jsonl",
    "sft": "sft.jsonl",
    "stats": "splits.json",
    "tokenizer": "tokenizer",
}


def prepared_data() -> dict[str, Path]:
    """{name: path} of the default config's prompt sets and tokenizer as the rule data_prepare
    writes them (grpo_repro.data.prepare.prepare): results/data/ when the pipeline has run, else
    built once under results/benchmarks_cache/data/ (rebuilt when the settings change)."""
    import json

    from grpo_repro.data.prepare import prepare

    pipeline = {k: ROOT / "results" / "data" / v for k, v in DATA_FILES.items()}
    if all(p.exists() for p in pipeline.values()):
        return pipeline
    config = load_config()
    keys = {k: config[k] for k in ("seed", "data", "prompt", "organism", "model")}
    d = CACHE / "data"
    out = {k: d / v for k, v in DATA_FILES.items()}
    stamp = d / "settings.json"
    fresh = stamp.exists() and json.loads(stamp.read_text()) == keys
    if not (fresh and all(p.exists() for p in out.values())):
        print(f"preparing the default config's prompt sets into {d} (once)", flush=True)
        d.mkdir(parents=True, exist_ok=True)
        prepare(config, out)
        stamp.write_text(json.dumps(keys))
    return out


def cached_ref(sft_steps: int = 300) -> Path:
    """A quick pi_ref: the pipeline's train_reference function (default config, SFT cut to
    `sft_steps` steps) on prepared_data()'s SFT set; built once under results/benchmarks_cache/
    (rebuilt when the config or step count changes)."""
    import json

    from grpo_repro.train import sft

    config = load_config()
    data = prepared_data()
    keys = {k: config[k] for k in ("seed", "data", "prompt", "organism")}
    keys["organism"] = {**keys["organism"], "sft_steps": int(sft_steps)}
    keys["sft_data"] = str(data["sft"])
    root = CACHE / f"ref_sft{sft_steps}"
    stamp, model = root / "settings.json", root / "model"
    if stamp.exists() and json.loads(stamp.read_text()) == keys and model.exists():
        return model
    print(f"building pi_ref: {sft_steps} SFT steps into {root} (once)", flush=True)
    t0 = time.time()
    root.mkdir(parents=True, exist_ok=True)
    sft.run(
        data["sft"],
        data["tokenizer"],
        model,
        root / "sft_log.csv",
        root / "run.json",
        config["seed"],
        keys["organism"],
        threads=1,
    )
    stamp.write_text(json.dumps(keys))
    print(f"pi_ref built in {time.time() - t0:.0f} s", flush=True)
    return model


def resolve_inputs(ref: str | None, prompts: str | None, sft_steps: int = 300):
    """(pi_ref dir, prompt records, where the prompts come from): --ref, else
    results/train/ref/model, else a cached quick pi_ref; --prompts, else the training pool of
    prepared_data() (results/data/train_pool.jsonl when the pipeline has run)."""
    from grpo_repro.data.sets import read_prompts

    if ref is None:
        ref = PIPELINE_REF if PIPELINE_REF.exists() else cached_ref(sft_steps)
    if prompts is None:
        prompts = prepared_data()["pool"]
    return Path(ref), read_prompts(prompts), str(prompts)


def build_trainer(config, records, ref, variant="grpo", steps=20, fast=None, seed=0):
    """A GRPO trainer configured as grpo_repro.train.grpo.train configures it (same GRPOConfig,
    reward, paper advantage), without checkpoints. fast: None = the project's trainer with TRL's
    generation and log-probs; a dict = FastGRPOTrainer with fast_options=fast."""
    import tempfile

    from transformers import PrinterCallback

    from grpo_repro.models import load_policy
    from grpo_repro.train import grpo
    from grpo_repro.train.run_settings import grpo_run

    model, tokenizer = load_policy(ref)
    trainer, _, _ = grpo.build_trainer(
        model,
        tokenizer,
        grpo_run(config, variant, seed),
        records,
        tempfile.mkdtemp(prefix="grpo_bench_"),
        steps,
        fast=fast,
        save_strategy="no",
        disable_tqdm=True,
    )
    trainer.remove_callback(PrinterCallback)  # no log dict printed per step
    return trainer


class Profiler:
    """Wall-clock timers around TRL's methods, attached to one trainer instance; one row per
    optimizer step (plus the step's CPU time of this process, less sensitive to other processes). The first `skip_first` steps (warm-up) are not measured, and only whole
    generation cycles (mu steps) are."""

    def __init__(self, trainer, skip_first=2):
        import torch
        from transformers import TrainerCallback

        self.trainer, self.skip_first = trainer, skip_first
        self.cur, self.steps, self.t_step, self.c_step = defaultdict(float), [], None, None
        self.counts = defaultdict(int)
        prof = self

        def wrap(obj, name, key_fn):
            orig = getattr(obj, name)

            def timed(*a, **kw):
                key = key_fn(*a, **kw)
                t0 = time.perf_counter()
                try:
                    return orig(*a, **kw)
                finally:
                    prof.cur[key] += time.perf_counter() - t0
                    prof.counts[key] += 1

            setattr(obj, name, timed)

        def logps_key(model, *a, **kw):
            if torch.is_grad_enabled():
                return "forward"
            ref = trainer.ref_model
            return "ref_logps" if (ref is not None and model is ref) else "old_logps"

        wrap(trainer, "_generate_single_turn", lambda *a, **k: "generation")
        wrap(trainer, "_calculate_rewards", lambda *a, **k: "reward")
        wrap(trainer, "_get_per_token_logps_and_entropies", logps_key)
        wrap(trainer, "_prepare_inputs", lambda *a, **k: "_prepare")
        wrap(trainer, "compute_loss", lambda *a, **k: "_loss")
        wrap(trainer.accelerator, "backward", lambda *a, **k: "backward")
        wrap(trainer.accelerator, "clip_grad_norm_", lambda *a, **k: "optimizer")

        class Hooks(TrainerCallback):
            def on_train_begin(self, args, state, control, **kw):
                wrap(trainer.optimizer, "step", lambda *a, **k: "optimizer")

            def on_step_begin(self, args, state, control, **kw):
                prof.close()
                prof.t_step, prof.c_step = time.perf_counter(), time.process_time()

            def on_train_end(self, args, state, control, **kw):
                prof.close()

        trainer.add_callback(Hooks())

    def close(self):
        if self.t_step is None:
            return
        total, c = time.perf_counter() - self.t_step, dict(self.cur)
        keys = (
            "generation",
            "reward",
            "old_logps",
            "ref_logps",
            "forward",
            "backward",
            "optimizer",
        )
        row = {k: c.get(k, 0.0) for k in keys}
        row["bookkeeping"] = c.get("_prepare", 0.0) - sum(row[k] for k in keys[:4])
        row["loss"] = c.get("_loss", 0.0) - row["forward"]
        row["other"] = total - c.get("_prepare", 0.0) - c.get("_loss", 0.0)
        row["other"] -= row["backward"] + row["optimizer"]
        row["total"] = total
        row["cpu"] = time.process_time() - self.c_step  # this process's CPU seconds (1 thread)
        self.steps.append(row)
        self.cur, self.t_step = defaultdict(float), None

    def measured(self):
        mu = int(self.trainer.args.num_iterations)
        rows = self.steps[self.skip_first :]
        return rows[: len(rows) - len(rows) % mu]

    def summary(self) -> dict:
        rows = self.measured()
        return {k: statistics.fmean(r[k] for r in rows) for k in [*COMPONENTS, "total", "cpu"]}


def table(title: str, summaries: dict[str, dict]) -> str:
    """Markdown table: ms/step and % of the step per component, one column pair per summary."""
    names = list(summaries)
    head = " | ".join(f"{n} ms/step | {n} %" for n in names)
    lines = [f"### {title}", "", f"| component | {head} |", "|---|" + "---:|---:|" * len(names)]
    for k in [*COMPONENTS, "total"]:
        cells = []
        for n in names:
            s = summaries[n]
            cells += [f"{1000 * s[k]:.1f}", f"{100 * s[k] / s['total']:.1f}"]
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def reset_peak_rss() -> None:
    """Reset this process's peak resident set size (VmHWM; Linux >= 4.0)."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def peak_rss_gib() -> float:
    """Peak resident set size of this process since the last reset_peak_rss (GiB)."""
    text = Path("/proc/self/status").read_text()
    return int(re.search(r"VmHWM:\s+(\d+)", text).group(1)) / 2**20


def matmul_gflops(m: int, k: int, n: int, reps: int, rounds: int = 3) -> float:
    """Best-of-rounds fp32 torch.mm rate (GFLOP/s) at the current thread count."""
    import torch

    x, w = torch.randn(m, k), torch.randn(k, n)
    torch.mm(x, w)
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            torch.mm(x, w)
        best = min(best, time.perf_counter() - t0)
    return 2 * m * k * n * reps / best / 1e9
