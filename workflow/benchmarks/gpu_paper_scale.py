"""Paper-scale check on one GPU (no downloads): a random model of Qwen2.5-0.5B's shape (hidden 896,
24 layers, 14 heads, 2 KV heads, ffn 4864) with the organism's tokenizer, trained with the
paper's GRPO settings (Sec. 6: G 16, per-device batch 16, grad accum 4, mu 10, completion 200,
temperature 0.1, bf16) through the pipeline's own train(), then evaluated with the pipeline's
sampler (50 samples x 200 tokens). Prints seconds per optimizer step, evaluation tokens/s, and
extrapolations to the paper's run (2670 steps; 1319 x 50 samples per checkpoint).

Usage: python workflow/benchmarks/gpu_paper_scale.py OUT_DIR [--steps 20] [--eval-prompts 64]
"""

import argparse
import json
import time
from pathlib import Path

import torch

from grpo_repro import config as cfg
from grpo_repro.data import sets as data
from grpo_repro.data.organism import TaskSpec, generate
from grpo_repro.data.tokenizer import build_tokenizer
from grpo_repro.evaluate.run import run_eval_job
from grpo_repro.io import write_jsonl
from grpo_repro.models import save_policy
from grpo_repro.train.grpo import train
from grpo_repro.train.schedule import checkpoint_steps
from grpo_repro.train.sft import build_model

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--steps", type=int, default=20)
ap.add_argument("--eval-prompts", type=int, default=64)
ap.add_argument(
    "--shape",
    type=int,
    nargs=5,
    default=[896, 24, 14, 2, 4864],
    help="hidden layers heads kv_heads ffn (default: Qwen2.5-0.5B)",
)
a = ap.parse_args()
out = Path(a.out)
root = Path(__file__).resolve().parents[2]
config = cfg.load(root / "config" / "paper.yaml")
config["prompt"].update(template="plain", system=None)
config["train"].update(prompts_per_step=4, devices=1, max_steps=a.steps, save_steps=a.steps // 2)
splits = generate({"train": 2000, "test": a.eval_prompts}, TaskSpec(), seed=0)
train_recs, test_recs = splits["train"], splits["test"]
train_recs = data.render(train_recs, config["prompt"])
test_recs = data.render(test_recs, config["prompt"])
tok = build_tokenizer([r["prompt"] + r["answer"] for r in train_recs + test_recs])
hidden, layers, heads, kv_heads, ffn = a.shape
model = build_model(
    len(tok),
    hidden,
    layers,
    heads,
    ffn,
    tok.pad_token_id,
    tok.bos_token_id,
    tok.eos_token_id,
    max_len=1024,
)
model.config.num_key_value_heads = kv_heads
model = type(model)(model.config)  # rebuild with grouped-query attention (Qwen2.5-0.5B: 2 KV heads)
n_params = sum(p.numel() for p in model.parameters())
save_policy(model, tok, out / "ref", marker={"random_qwen2.5_0.5b_shape": True})
cuda = torch.cuda.is_available()
config["train"]["bf16"] = cuda
print(
    f"model: {n_params / 1e6:.1f}M parameters on {torch.cuda.get_device_name(0) if cuda else 'CPU'}",
    flush=True,
)

steps = checkpoint_steps(config["train"], len(train_recs))
t0 = time.time()
summary = train(
    config, "grpo", 0, str(out / "ref"), train_recs, out / "train", steps, use_cpu=not cuda
)
train_s = time.time() - t0
per_step = train_s / a.steps
print(
    f"GRPO: {a.steps} steps in {train_s:.1f} s = {per_step:.2f} s/step (1 GPU, per-device batch "
    f"{summary['grpo_config']['per_device_train_batch_size']}, mu {config['train']['num_iterations']}); "
    f"paper's 2670 steps on 1 GPU: {2670 * per_step / 3600:.1f} h",
    flush=True,
)

write_jsonl(out / "test.jsonl", test_recs)
t0 = time.time()
task = {"step": a.steps, "split": "test", "temperature": None}
res = run_eval_job(
    {a.steps: out / "train" / "checkpoints" / f"step_{a.steps}"},
    [{**task, "csv": out / "eval.csv", "json": out / "eval.json"}],
    cfg.eval_settings(config),
    "grpo/seed_0",
    {"test": out / "test.jsonl"},
    progress=False,
    batch_prompts=config["eval"]["batch_prompts"],
)
meta = json.loads((out / "eval.json").read_text())
tps = meta["timing"]["tokens_per_s"]
n_tok = 1319 * 50 * 200
print(
    f"eval: {a.eval_prompts} prompts x 50 samples in {time.time() - t0:.1f} s, {tps:.0f} tokens/s; "
    f"1319 x 50 x 200 tokens per checkpoint: {n_tok / tps / 60:.1f} min",
    flush=True,
)
(out / "gpu_paper_scale.json").write_text(
    json.dumps(
        {
            "params": n_params,
            "train_seconds": train_s,
            "seconds_per_step": per_step,
            "eval_tokens_per_s": tps,
            "eval_meta_timing": meta["timing"],
        },
        indent=2,
    )
)
