"""Shared fixtures: the default configuration and a tiny organism policy built in a temp dir."""

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def default_config():
    from grpo_repro import config as cfg

    return cfg.load(ROOT / "config" / "config.yaml")


@pytest.fixture(scope="session")
def tiny_policy(tmp_path_factory):
    """(model dir, records): a random 2-layer organism policy with its tokenizer and 4 prompts."""
    import torch

    from grpo_repro import data
    from grpo_repro.organism.model import build_model
    from grpo_repro.organism.tasks import TaskSpec, generate
    from grpo_repro.organism.tokenizer import build_tokenizer
    from grpo_repro.train_grpo import save_policy

    torch.set_num_threads(1)
    prompt_cfg = {"system": None, "template": "plain", "instruction": "Answer after ####."}
    train, _ = generate(40, 4, TaskSpec(1, 2, 9, 99), seed=0)
    records = data.render(train[:4], prompt_cfg)
    tok = build_tokenizer([r["prompt"] + r["answer"] for r in data.render(train, prompt_cfg)], max_value=99)
    model = build_model(len(tok), 32, 2, 2, 64, tok.pad_token_id, tok.bos_token_id, tok.eos_token_id)
    path = tmp_path_factory.mktemp("tiny") / "ref"
    save_policy(model, tok, path, marker={"tiny": True})
    return path, records
