"""Helpers of the fast GRPO step tests (tests/unit/train/test_fast*.py; grpo_repro.train.fast):
GRPO trainers on the micro policy (tests/helpers/tiny_lm.py) built as grpo_repro.train.grpo.train
builds them, with the project's trainer (TRL generation and log-probs) or the fast one."""

from __future__ import annotations

import os

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def micro_reward(prompts, completions, gold, **kw):
    """The answer checker in lenient mode (the micro policy never writes ####)."""
    from grpo_repro.reward import is_correct

    return [float(is_correct(c, g, "lenient")) for c, g in zip(completions, gold)]


def micro_config(prompts_per_step=5, G=8, max_len=10, beta=0.1, mu=2, save_steps=2):
    """The default configuration with a micro GRPO batch (prompts_per_step x G, mu iterations)."""
    from grpo_repro import config as cfg
    from tests.helpers import ROOT

    config = cfg.load(ROOT / "config" / "config.yaml")
    config["train"].update(
        prompts_per_step=prompts_per_step,
        num_generations=G,
        max_completion_length=max_len,
        beta=beta,
        num_iterations=mu,
        save_steps=save_steps,
        learning_rate=1e-3,
    )
    return config


def save_micro(path, sharpness=4.0, **kw):
    """The micro policy (tiny_lm.micro_policy with `kw`) saved as a model directory (what
    load_policy reads)."""
    from grpo_repro.models import save_policy
    from tests.helpers.tiny_lm import micro_policy

    model, tok = micro_policy(sharpness=sharpness, **kw)
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    save_policy(model, tok, path)
    return path


def eval_tasks(out, steps):
    """Evaluation tasks (grpo_repro.evaluate.tasks.Task as dicts) of `steps` on the test split at
    eval.temperature, tables under `out`."""
    return [
        {
            "step": s,
            "split": "test",
            "temperature": None,
            "csv": str(out / f"step_{s}.csv"),
            "json": str(out / f"step_{s}.json"),
        }
        for s in steps
    ]


def build(
    ref_path,
    records,
    config,
    variant="grpo",
    steps=4,
    work_dir="/tmp/unused_fast",
    fast=None,
    callbacks=(),
    seed=0,
    reward=micro_reward,
    **overrides,
):
    """A trainer configured as grpo_repro.train.grpo.train configures it, without checkpoints.
    fast=None: the project's trainer (PaperGRPOTrainer); a dict: FastGRPOTrainer(fast_options=fast).
    overrides: GRPOConfig fields."""
    from grpo_repro.models import load_policy
    from grpo_repro.train.grpo import build_trainer
    from grpo_repro.train.run_settings import grpo_run

    model, tok = load_policy(ref_path)
    trainer, _, _ = build_trainer(
        model,
        tok,
        grpo_run(config, variant, seed),
        records,
        work_dir,
        steps,
        reward_fn=reward,
        callbacks=callbacks,
        fast=fast,
        disable_tqdm=True,
        save_strategy="no",
        **overrides,
    )
    return trainer


def batch_inputs(records, G):
    """The rows TRL's dataloader hands _generate_and_score_completions: each record G times."""
    return [{"prompt": r["prompt"], "gold": r["gold"]} for r in records for _ in range(G)]


def direct_logps(model, ids, mask, c):
    """log p(token | prefix) of the last c columns from one plain forward with full logits."""
    import torch

    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask).logits[:, -c - 1 : -1].float()
    lp = torch.log_softmax(logits, -1).gather(-1, ids[:, -c:].unsqueeze(-1)).squeeze(-1)
    return lp * mask[:, -c:]


def trl_rows(tok, rows):
    """(input_ids, attention_mask, completion width) laid out as TRL lays out a batch: prompts
    left padded to a common width, completions right padded. rows: [(prompt ids, completion ids)]."""
    import torch

    pw, cw = max(len(p) for p, _ in rows), max(len(c) for _, c in rows)
    ids = torch.full((len(rows), pw + cw), tok.pad_token_id)
    mask = torch.zeros_like(ids)
    for r, (p, c) in enumerate(rows):
        ids[r, pw - len(p) : pw], mask[r, pw - len(p) : pw] = torch.tensor(p), 1
        ids[r, pw : pw + len(c)], mask[r, pw : pw + len(c)] = torch.tensor(c), 1
    return ids, mask, cw
