"""Paper-scale check on one GPU, no downloads (docs/gpu.md, "The first GPU"): a randomly initialised
model of Qwen2.5-0.5B's published shape (grpo_repro.memory.KNOWN: hidden 896, 24 layers, 14 heads,
2 KV heads, ffn 4864, its 151,936-token vocabulary, tied embeddings) with the rehearsal's byte-level
BPE and Qwen2.5's chat template (grpo_repro.rehearsal's stand-in, on GSM8K's shipped excerpt),
trained with config/paper.yaml's GRPO settings (Sec. 6: G 16, mu 10, 200-token completions,
temperature 0.1, bf16, TRL's own step) through the pipeline's own train(), then evaluated with the
pipeline's sampler (50 samples x 200 tokens). Its phases, each written to OUT/gpu_paper_scale.json as
soon as it ends, so a run cut by its time limit keeps what it measured; a phase that would start
past --budget-s is skipped. OUT/throughput.json is the throughput table that
`python -m grpo_repro.plan --throughput OUT/throughput.json` reads (grpo_repro.plan: the
repository's table, workflow/resources/gpu_throughput.json, holds assumptions until a GPU has
measured them):

  1. train:  one training process of the paper's run at its real micro-batch (16 completions x 4
             micro-steps: one device's share of the paper's step; generation by TRL itself, vLLM's
             wheel is too large to travel): seconds per optimizer step, peak GPU memory beside the
             memory model's (grpo_repro.memory) for the run as measured;
  2. zero_control: the zero-success control as the paper's graph runs it (one process, the
             training's micro-batch of 16, 28 micro-steps: grpo_repro.workflow_plan.Plan.
             zero_control_run), the same measurements;
  3. eval:   tokens/s at 50 samples per prompt (eval.dtype of config/paper.yaml, the HF sampler);
  4. logits: bf16 against fp32 on the trained model's own completions: the largest logit difference,
             and at the paper's temperature 0.1 (logits / 0.1 magnify every rounding tenfold) the
             total variation between the next-token distributions and how often the argmax differs;
  5. server_sync (2 GPUs or more): the paper's server layout, one trainer process and one vLLM
             server GPU, one step: the server's log-probs against the trainer's before and after
             TRL's NCCL weight sync, and the sync's seconds (phase_server_sync).

The JSON also lists the distributions of the modules the run imported by the pipeline's own
import statements (`distributions`), which workflow/benchmarks/device_wheels.py checks against the
carried wheels and the machine's image.

Usage: python workflow/benchmarks/gpu_paper_scale.py OUT_DIR [--steps 10] [--control-steps 10]
       [--eval-prompts 64] [--budget-s 420] [--shape H L HEADS KV FFN VOCAB] [--completion-tokens N]
On a GPU machine without network: workflow/benchmarks/device_check.sh OUT_DIR (installs the carried
wheels, then runs this within 8 minutes). On a CPU it runs too, for a quick check of the script
(tests/unit/test_gpu_paper_scale.py): `--shape 32 1 2 1 64 4096 --steps 2 --control-steps 1
--completion-tokens 16`.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path

import torch

from grpo_repro import config as cfg
from grpo_repro import memory
from grpo_repro.data import sets as data
from grpo_repro.data.prepare import build_bpe_tokenizer
from grpo_repro.data.source_records.gsm8k import load_gsm8k
from grpo_repro.evaluate.job import run_eval_job
from grpo_repro.io import write_json, write_jsonl
from grpo_repro.models import load_policy, save_policy
from grpo_repro.rehearsal import EXCERPT
from grpo_repro.train.grpo import train
from grpo_repro.train.run_settings import GRPORun, checkpoint_steps, grpo_run
from grpo_repro.workflow_plan import Plan

#: Qwen2.5-0.5B(-Instruct)'s shape: hidden, layers, heads, KV heads, ffn, vocabulary
_Q = memory.KNOWN["Qwen/Qwen2.5-0.5B-Instruct"]
QWEN25_05B = [_Q.hidden, _Q.layers, _Q.heads, _Q.kv_heads, _Q.ffn, _Q.vocab]
GSM8K = {"train": 7473, "test": 1319}  # the paper graph's split sizes (its jobs' layouts)


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=10, help="GRPO optimizer steps (one batch x mu)")
    ap.add_argument(
        "--control-steps", type=int, default=10, help="optimizer steps of the zero control phase"
    )
    ap.add_argument("--eval-prompts", type=int, default=64)
    ap.add_argument(
        "--completion-tokens", type=int, help="completion length (default: the paper's 200)"
    )
    ap.add_argument("--budget-s", type=float, default=420.0, help="no phase starts after this")
    ap.add_argument(
        "--shape",
        type=int,
        nargs=6,
        default=QWEN25_05B,
        help="hidden layers heads kv_heads ffn vocab (default: Qwen2.5-0.5B)",
    )
    return ap.parse_args(argv)


PROBE_PROMPT = "Tom has 3 apples and buys 4 more. How many apples does he have?"  # server_sync


def paper_config(steps: int, tokens: int | None = None) -> dict:
    """config/paper.yaml on one GPU: 4 prompts x G 16 per step = per-device batch 16 x grad accum
    4 (one device's share of the paper's step), HF generation (no vLLM on the lent machine);
    `tokens`: completions of that many tokens instead of the paper's 200 (a CPU's quick check)."""
    config = cfg.load(Path(__file__).resolve().parents[2] / "config" / "paper.yaml")
    cuda = torch.cuda.is_available()
    config["train"].update(
        prompts_per_step=4,
        devices=1,
        max_steps=steps,
        save_steps=steps,
        use_vllm=False,  # no vLLM on the lent machine: TRL's own generation
        vllm_mode="colocate",
        bf16=cuda,
    )
    if tokens is not None:
        config["train"]["max_completion_length"] = config["eval"]["max_new_tokens"] = tokens
    config["eval"]["backend"] = "hf"
    return config


def random_model(tok, shape):
    """A random Qwen2 of `shape` (QWEN25_05B's order) with Qwen2.5-0.5B's other published
    settings; the tokenizer's ids (a smaller vocabulary) all fall inside its vocabulary."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    hidden, layers, heads, kv_heads, ffn, vocab = shape
    torch.manual_seed(0)
    return Qwen2ForCausalLM(
        Qwen2Config(
            vocab_size=max(vocab, len(tok)),
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            num_key_value_heads=kv_heads,
            intermediate_size=ffn,
            max_position_embeddings=32768,
            rope_theta=1000000.0,
            rms_norm_eps=1e-6,
            tie_word_embeddings=True,
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id,
        )
    )


def control_run(config: dict, steps: int) -> GRPORun:
    """The zero-success control as the paper's graph lays it out (one process, the training's
    micro-batch, accumulation making up the step), with TRL's generation and `steps` steps."""
    paper = cfg.load(Path(__file__).resolve().parents[2] / "config" / "paper.yaml")
    train = Plan(paper, GSM8K).zero_control_run().sections["train"]
    run = {**config, "train": {**config["train"], **train}}
    run["train"].update(
        max_steps=steps,
        save_steps=steps,
        use_vllm=False,
        bf16=config["train"]["bf16"],
        max_completion_length=config["train"]["max_completion_length"],
    )
    return grpo_run(run, "grpo", 0)


def phase_train(run: GRPORun, ref: Path, out: Path, records, shape, prompt_tokens: int) -> dict:
    """`run` for its max_steps optimizer steps from pi_ref `ref`, written under `out`: seconds
    per step, and peak GPU memory beside the memory model's for the run as measured (sequences of
    the records' longest prompt, `prompt_tokens`, and a whole completion)."""
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    settings = run.sections["train"]
    steps = checkpoint_steps(settings, len(records))
    summary = train(run, str(ref), records, out, steps, use_cpu=not cuda)
    seconds = time.perf_counter() - t0
    per_step = seconds / settings["max_steps"]
    tokens = prompt_tokens + settings["max_completion_length"]
    device = torch.cuda.get_device_properties(0).total_memory if cuda else 80e9
    model = memory.train_process(settings, shape, tokens, device)
    return {
        "seconds": seconds,
        "seconds_per_step": per_step,
        "steps_per_s": 1 / per_step,
        "peak_memory_gb": torch.cuda.max_memory_allocated() / 1e9 if cuda else None,
        "memory_model_gb": model.total / 1e9,
        "memory_model": {k: v / 1e9 for k, v in model.parts.items()},
        "per_device_batch": summary["grpo_config"]["per_device_train_batch_size"],
        "grad_accum": settings["grad_accum"],
        "mu": settings["num_iterations"],
        "group_size": settings["num_generations"],
        "completion_tokens": settings["max_completion_length"],
        # one device's completion tokens per optimizer step (grpo_repro.plan scales by it)
        "completion_tokens_per_step": settings["prompts_per_step"]
        * settings["num_generations"]
        * settings["max_completion_length"],
    }


def phase_eval(config, out: Path, model_dir: Path, test_recs, step: int) -> dict:
    write_jsonl(out / "test.jsonl", test_recs)
    task = {"step": step, "split": "test", "temperature": None}
    t0 = time.perf_counter()
    run_eval_job(
        {step: model_dir},
        [{**task, "csv": out / "eval.csv", "json": out / "eval.json"}],
        cfg.eval_settings(config),
        "grpo/seed_0",
        {"test": out / "test.jsonl"},
        progress=False,
        batch_prompts=config["eval"]["batch_prompts"],  # a speed setting: not in eval_settings
    )
    meta = json.loads((out / "eval.json").read_text())
    tps = meta["timing"]["tokens_per_s"]
    return {
        "seconds": time.perf_counter() - t0,
        "prompts": len(test_recs),
        "samples": config["eval"]["samples"],
        "tokens_per_s": tps,
        "precision": meta.get("precision"),
    }


def throughput(result: dict) -> dict:
    """The throughput table of grpo_repro.plan from the measured phases (None: a phase missing)."""
    train, ev = result.get("train", {}), result.get("eval", {})
    if "seconds_per_step" not in train or not ev.get("tokens_per_s"):
        return None
    device = result["device"]
    return {
        "model": "Qwen/Qwen2.5-0.5B-Instruct",
        "parameters": result["parameters"],
        "parameters_source": f"the random model of shape {result['shape']} measured here",
        "train": {
            "seconds_per_step": train["seconds_per_step"],
            "completion_tokens_per_step": train["completion_tokens_per_step"],
            "measured": True,
            "device": device,
            "figure": f"{train['seconds_per_step']:.2f} s per optimizer step at one device's share "
            "of the paper's step (TRL's own generation, no vLLM)",
            "source": f"workflow/benchmarks/gpu_paper_scale.py, torch {result['torch']}",
        },
        "eval": {
            "tokens_per_s": ev["tokens_per_s"],
            "measured": True,
            "device": device,
            "figure": f"{ev['tokens_per_s']:,.0f} completion tokens/s on one GPU (the HF sampler, "
            f"{ev['samples']} samples per prompt)",
            "source": f"workflow/benchmarks/gpu_paper_scale.py, torch {result['torch']}",
        },
    }


@torch.no_grad()
def phase_logits(model_dir: Path, prompts: list[str], temperature: float) -> dict:
    """bf16 against fp32 next-token distributions on the model's own greedy completions."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model, tok = load_policy(model_dir, dtype="float32", device=device)
    enc = tok(prompts, return_tensors="pt", padding=True).to(device)
    seqs = model.generate(**enc, do_sample=False, max_new_tokens=64)
    mask = seqs != tok.pad_token_id
    ref = model(seqs, attention_mask=mask).logits.float()
    found = {}
    variants = {"bf16_weights": torch.bfloat16}
    if device == "cuda":
        variants["bf16_autocast"] = None
    for name, dtype in variants.items():
        if dtype is None:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                got = model(seqs, attention_mask=mask).logits.float()
        else:
            low = load_policy(model_dir, dtype="bfloat16", device=device)[0]
            got = low(seqs, attention_mask=mask).logits.float()
            del low
        keep = mask.bool()
        p = torch.softmax(ref[keep] / temperature, -1)
        q = torch.softmax(got[keep] / temperature, -1)
        found[name] = {
            "max_abs_logit_diff": float((got - ref)[keep].abs().max()),
            "mean_abs_logit_diff": float((got - ref)[keep].abs().mean()),
            f"mean_tv_at_T{temperature:g}": float(0.5 * (p - q).abs().sum(-1).mean()),
            "argmax_disagreement": float((p.argmax(-1) != q.argmax(-1)).float().mean()),
        }
    return {"positions": int(mask.sum()), "temperature": temperature, **found}


def server_gap(trainer) -> float:
    """max |log p_server - log p_trainer| over 16 tokens the job's vLLM server samples (temperature
    1, so its log-probs are the model's own) after a fixed prompt."""
    client = trainer.vllm_generation.vllm_client
    got = client.generate(prompts=[PROBE_PROMPT], n=1, max_tokens=16, temperature=1.0)
    prompt, completion = got["prompt_ids"][0], got["completion_ids"][0]
    served = torch.tensor([lp[0] if isinstance(lp, list) else lp for lp in got["logprobs"][0]])
    ids = torch.tensor([prompt + completion], device=trainer.model.device)
    with torch.no_grad():
        logits = trainer.model(ids).logits[0, len(prompt) - 1 : -1].float()
    own = logits.log_softmax(-1).gather(-1, ids[0, len(prompt) :, None])[:, 0].cpu()
    return float((served[: len(own)] - own).abs().max())


def phase_server_sync(config, out: Path, records) -> dict:
    """The paper's server layout (train.vllm_mode server) on 2 GPUs: the job's vLLM server
    (grpo_repro.train.vllm_server.serve) on GPU 1, one trainer process on GPU 0, TRL's NCCL weight
    sync (VLLMClient.init_communicator, update_named_params): after one optimizer step, the
    server's log-probs against the trainer's before and after the sync, and the sync's seconds.
    What a CPU cannot check (vLLM's CPU backend has no weight-transfer engine)."""
    import dataclasses

    from transformers import TrainerCallback

    from grpo_repro.gpus import free_port
    from grpo_repro.models import rollout_dtype
    from grpo_repro.train import vllm_server
    from grpo_repro.train.grpo import build_trainer

    if torch.cuda.device_count() < 2:
        return {"skipped": f"needs 2 GPUs (trainer + server), found {torch.cuda.device_count()}"}
    run_config = json.loads(json.dumps(config))
    run_config["train"].update(use_vllm=True, vllm_mode="server", max_steps=1, save_steps=1)
    ref = out / "ref"
    found = {}

    class AfterStep(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            found["gap_before_sync"] = server_gap(trainer)
            t0 = time.perf_counter()
            trainer.vllm_generation.sync_weights()
            found["sync_seconds"] = time.perf_counter() - t0
            found["gap_after_sync"] = server_gap(trainer)

    dtype = rollout_dtype(run_config["train"])
    with vllm_server.serve(ref, "1", out / "vllm_server.log", dtype) as url:
        run = grpo_run(run_config, "grpo", 0)  # the server's address: runtime fields
        run = dataclasses.replace(run, server_url=url, group_port=free_port())
        model, tok = load_policy(ref)
        trainer, _, _ = build_trainer(
            model, tok, run, records[:64], out / "server_work", 1,
            use_cpu=False, callbacks=[AfterStep()], save_strategy="no",
        )  # fmt: skip
        found["gap_at_start"] = server_gap(trainer)
        trainer.train()
    return {"dtype": dtype, **found}


@functools.cache
def named_modules() -> frozenset[str]:
    """The top-level modules the pipeline's own code (the package and this script) imports."""
    import ast

    src = Path(__file__).resolve().parents[1] / "src" / "grpo_repro"
    named = set()
    for path in [Path(__file__), *src.rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                named |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                named.add(node.module.split(".")[0])
    return frozenset(named)


def imported_distributions() -> list[str]:
    """The distributions of the modules this process imported that the pipeline's own code imports
    by name (named_modules): what the machine must hold for it (their own requirements:
    device_wheels.py checks the carried wheels'; the image holds its packages')."""
    import importlib.metadata as md

    owners = md.packages_distributions()
    loaded = {name.split(".")[0] for name in list(sys.modules)} & named_modules()
    return sorted({d for m in loaded for d in owners.get(m, [])} - {"grpo_repro"})


def main(argv=None) -> None:
    a = parse(argv)
    start = time.perf_counter()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    config = paper_config(a.steps, a.completion_tokens)
    raw_train = load_gsm8k("train", EXCERPT / "train.jsonl")
    raw_test = load_gsm8k("test", EXCERPT / "test.jsonl", n=min(64, a.eval_prompts))
    texts = [t for r in raw_train for t in (r["question"], r["answer"])]
    tok = build_bpe_tokenizer(texts, config["organism"]["bpe_vocab_size"])
    train_recs = data.render(raw_train, config["prompt"], tok)
    test_recs = data.render(raw_test, config["prompt"], tok)
    prompt_tokens = max(len(tok(r["prompt"])["input_ids"]) for r in train_recs)
    model = random_model(tok, a.shape)
    save_policy(model, tok, out / "ref")
    shape = memory.Shape.from_config(model.config.to_dict())
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU"
    result = {
        "device": gpu,
        "torch": torch.__version__,
        "parameters": sum(p.numel() for p in model.parameters()),
        "shape": a.shape,
    }
    del model
    print(f"model: {result['parameters'] / 1e6:.1f}M parameters on {gpu}", flush=True)
    step = a.steps
    final = out / "train" / "checkpoints" / f"step_{step}"
    phases = [
        (
            "train",
            lambda: phase_train(
                grpo_run(config, "grpo", 0), out / "ref", out / "train", train_recs, shape,
                prompt_tokens,
            ),
        ),
        (
            "zero_control",
            lambda: phase_train(
                control_run(config, a.control_steps), out / "ref", out / "zero_control",
                train_recs, shape, prompt_tokens,
            ),
        ),
        ("eval", lambda: phase_eval(config, out, final, test_recs, step)),
        (
            "logits",
            lambda: phase_logits(
                final, [r["prompt"] for r in test_recs[:16]], config["train"]["temperature"]
            ),
        ),
        ("server_sync", lambda: phase_server_sync(config, out, train_recs)),
    ]  # fmt: skip
    for name, run in phases:
        if time.perf_counter() - start > a.budget_s:
            result[name] = {"skipped": f"past the budget of {a.budget_s:.0f} s"}
        else:
            result[name] = run()
        print(f"{name}: {json.dumps(result[name])}", flush=True)
        result["distributions"] = imported_distributions()
        write_json(out / "gpu_paper_scale.json", result)
        table = throughput(result)
        if table is not None:
            write_json(out / "throughput.json", table)


if __name__ == "__main__":
    main()
