"""An evaluation job (Sec. 6; the rules evaluate_reference and evaluate_run): every table of one
run, each checkpoint loaded once in eval.dtype's weights (no autocast), its sampler closed before
the next checkpoint's is built (one vLLM engine at a time), and each table evaluated and written
by grpo_repro.evaluate.run (seeds, resumable chunks, atomic outputs).

The sampler of config key eval.backend is `make_sampler`'s: hf (HFSampler) or vllm (VLLMSampler).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from grpo_repro import io
from grpo_repro.data.sets import read_prompts
from grpo_repro.evaluate.run import (
    evaluate_records,
    partial_path_for,
    prompts_per_batch,
    task_samples,
)
from grpo_repro.gpus import vllm_platform
from grpo_repro.hub import revision_of
from grpo_repro.sampler.params import SamplingParams, eos_ids


def eval_dtype(choice: str, train: dict) -> str:
    """The weights' dtype of evaluation (config key eval.dtype), for either backend and with no
    autocast: `rollout` is the dtype training's rollouts are sampled with
    (grpo_repro.models.rollout_dtype of the train keys bf16, use_vllm), `float32` and `bfloat16`
    name it."""
    from grpo_repro.models import rollout_dtype

    if choice == "rollout":
        return rollout_dtype(train)
    if choice in ("float32", "bfloat16"):
        return choice
    raise ValueError(f"config key eval.dtype: {choice!r} is not rollout, float32 or bfloat16")


def open_sampler(
    ecfg: dict, model_dir, dtype: str, device: str, batch_prompts: int, platform: str = "cuda"
):
    """(sampler, weights sha256, load seconds) of one checkpoint: the HF backend's model on
    `device` with weights in `dtype`; vLLM's engine on `platform` (vllm.platform) started with
    `dtype` (the transformers model is then loaded on the CPU for its tokenizer and EOS ids only).
    `model_dir`: a local directory or a hub spec, read from its cached snapshot (grpo_repro.hub)."""
    from grpo_repro.hub import local_dir
    from grpo_repro.models import load_policy, model_hash

    t0 = time.perf_counter()
    model_dir = local_dir(model_dir)
    on = "cpu" if ecfg["backend"] == "vllm" else device
    model, tokenizer = load_policy(model_dir, dtype=dtype, device=on)
    sampler = make_sampler(
        ecfg["backend"],
        model,
        tokenizer,
        model_path=model_dir,
        batch_prompts=batch_prompts,
        dtype=dtype,
        **({"platform": platform} if ecfg["backend"] == "vllm" else {}),
    )
    return sampler, model_hash(model_dir), time.perf_counter() - t0


def close_sampler(sampler) -> None:
    """Release what a sampler holds (VLLMSampler.close: its engine and GPU memory) before the
    next checkpoint's is built, so that one engine at a time is alive."""
    close = getattr(sampler, "close", None)
    if close is not None:
        close()


def check_checkpoints(models: dict, steps: list[int]) -> None:
    """A training checkpoint lost or damaged: name it and the recovery, before any sampling."""
    from grpo_repro.train.checkpoints import checkpoint_problem, recovery_hint

    for step in (s for s in steps if s > 0):
        problem = checkpoint_problem(models[step])
        if problem:
            raise RuntimeError(
                f"checkpoint {models[step]}: {problem}; {recovery_hint(models[step])}"
            )


def device_sections(settings: dict) -> dict:
    """The sections preflight.check_device and gpus.job_gpus read, from evaluation's settings
    (config.eval_settings)."""
    vllm = settings.get("vllm", {})
    return {"train": {"bf16": settings["bf16"]}, "eval": settings["eval"], "vllm": vllm}


def run_eval_job(
    models: dict[int, str | Path],
    tasks: list[dict],
    settings: dict,
    run: str,
    data: dict[str, str | Path],
    threads: int = 1,
    progress: bool = True,
    batch_prompts: int | None = None,
) -> dict:
    """Evaluate one run: `tasks` (grpo_repro.evaluate.tasks.Task as dicts: step, split,
    temperature, csv, json) on the checkpoints `models` ({step: model dir}) and the prompt sets
    `data` ({split: jsonl}). `settings`: seed, eval (the config section), temperature (resolved),
    bf16 and use_vllm (train's; use_vllm false when absent); batch_prompts: prompts per sampler
    batch (speed only, config.SPEED_ONLY; default: eval's). Each model is loaded once, and its
    sampler is closed before the next one's is built (one vLLM engine at a time). Weights are in
    eval_dtype's dtype, with no autocast. Returns {(step, split, temperature): mean strict p_hat}.
    The rules evaluate_reference and evaluate_run.

    A table's partial file (its finished chunks) is kept until the whole job has finished: a job
    killed after some tables were written, whose outputs Snakemake then removes, rebuilds them from
    their chunks without sampling again."""
    import torch

    torch.set_num_threads(max(1, int(threads)))
    ecfg = settings["eval"]
    platform = vllm_platform(settings)  # eval.backend vllm: where its engine runs
    # the HF backend's device (vLLM's engine runs on `platform`)
    device = "cuda" if ecfg["backend"] == "vllm" or torch.cuda.is_available() else "cpu"
    dtype = eval_dtype(ecfg["dtype"], {k: settings.get(k, False) for k in ("bf16", "use_vllm")})
    precision = {"dtype": dtype, "backend": ecfg["backend"], "autocast": False}
    prompts = {split: read_prompts(path) for split, path in data.items()}  # validated on read
    summary, partials = {}, []
    steps = sorted({int(t["step"]) for t in tasks})
    check_checkpoints(models, steps)
    batch_prompts = int(ecfg["batch_prompts"] if batch_prompts is None else batch_prompts)
    for step in steps:
        model_dir = models[step]
        revision = revision_of(model_dir)
        sampler, digest, load_s = open_sampler(
            ecfg, model_dir, dtype, device, batch_prompts, platform
        )
        try:
            for task in (t for t in tasks if int(t["step"]) == step):
                split, temp = task["split"], task["temperature"]
                t = float(settings["temperature"] if temp is None else temp)
                params = SamplingParams(
                    temperature=t,
                    top_p=float(ecfg["top_p"]),
                    top_k=int(ecfg["top_k"]),
                    max_new_tokens=int(ecfg["max_new_tokens"]),
                )
                part = partial_path_for(task["csv"])
                n = task_samples(ecfg, split, t)
                sampler.batch_prompts = prompts_per_batch(batch_prompts, ecfg["samples"], n)
                df, meta = evaluate_records(
                    sampler,
                    prompts[split],
                    samples=n,
                    params=params,
                    seed=int(settings["seed"]),
                    run=run,
                    step=step,
                    split=split,
                    model_sha256=digest,
                    partial_path=part,
                    progress=progress,
                )
                meta.update(
                    precision={**precision, "eval.dtype": ecfg["dtype"]},
                    model_dir=str(model_dir),
                    data=str(data[split]),
                    threads=int(threads),
                    model_load_seconds=load_s,
                )
                if revision:  # a hub model: the commit its cached snapshot holds
                    meta["model_revision"] = revision
                io.write_json(task["json"], meta)  # the job removes the partials at its end
                io.write_csv(task["csv"], df)
                partials.append(part)
                summary[(step, split, temp)] = meta["mean_p_hat"]
                print(
                    f"[evaluate] {run} step {step} {split} T={t:g}: mean p_hat "
                    f"{meta['mean_p_hat']:.4f} (lenient {meta['mean_p_hat_lenient']:.4f}), "
                    f"{meta['timing']['seconds']:.1f}s, "
                    f"{meta['timing']['tokens_per_s'] or 0:.0f} tokens/s",
                    file=sys.stderr,
                )
        finally:
            close_sampler(sampler)
            sampler = None  # the model it held is freed before the next one loads
    for part in partials:
        part.unlink(missing_ok=True)
    return summary


def make_sampler(
    backend: str,
    model,
    tokenizer,
    model_path=None,
    batch_prompts: int = 32,
    dtype: str | None = None,
    **kw,
):
    """The sampler of config key eval.backend: hf (HFSampler) or vllm (VLLMSampler). `dtype`: the
    weights' dtype for vLLM's engine (default: `model`'s); the HF sampler samples `model` as loaded.
    vLLM's `kw` include platform (vllm.platform: cuda or cpu)."""
    if backend == "hf":
        from grpo_repro.sampler.hf import HFSampler

        return HFSampler(model, tokenizer, batch_prompts=batch_prompts, **kw)
    if backend == "vllm":
        from grpo_repro.sampler.vllm import VLLMSampler

        if model_path is None:
            raise ValueError("eval.backend=vllm needs the model directory")
        return VLLMSampler(
            model_path,
            tokenizer,
            dtype=dtype or str(model.dtype).removeprefix("torch."),
            eos_ids=eos_ids(model, tokenizer),
            batch_prompts=batch_prompts,
            **kw,
        )
    raise ValueError(f"unknown eval.backend {backend!r}; expected hf or vllm")
