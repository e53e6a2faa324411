"""Prompt sets of the experiment (Sec. 6), each record carrying its rendered prompt so that SFT,
training and evaluation see the same text:
  train  the prompts GRPO trains on (one epoch: each seen once; the paper's regime)
  val    a validation split from the training distribution (settings are chosen on it, never on
         the test split; evaluated when eval.splits holds `val`)
  test   held-out problems: the headline
  pool   a fixed, seeded sample of `train` (prompts training did see), tracked by evaluation as the
         `train` split; with train.on_pool GRPO trains on it alone, many epochs
  sft    the organism only: the worked solutions pi_ref learns from (disjoint from the others)

Prompt format (unstated in the paper, Sec. 6: chosen, configured and recorded).

Prompts are rendered to plain strings once, here, and the same strings go to SFT, to TRL's GRPO
(as standard, non-conversational prompts) and to evaluation, so the three cannot disagree.
"""

from __future__ import annotations

import random

from grpo_repro import io
from grpo_repro.data.sources import source

#: fields of every record of a prepared prompt set (results/data/*.jsonl)


PROMPT_FIELDS = ("prompt_id", "prompt", "gold")


def read_prompts(path) -> list[dict]:
    """Records of a prepared prompt set; DataError naming file and line on bad input."""
    return io.read_jsonl(path, required=PROMPT_FIELDS)


def render(records: list[dict], prompt_cfg: dict, tokenizer=None) -> list[dict]:
    return [{**r, "prompt": format_prompt(r["question"], prompt_cfg, tokenizer)} for r in records]


def train_pool(train: list[dict], size: int | None, seed: int) -> list[dict]:
    """A fixed, seeded pool of `size` training records (all of them when size is None)."""
    if size is None or size >= len(train):
        return list(train)
    idx = sorted(random.Random(seed + 1).sample(range(len(train)), size))
    return [train[i] for i in idx]


def check_sources(config: dict) -> None:
    """Fail at workflow load, before any job, on a missing or empty local data file or a missing
    local model directory (ValueError naming the config key). What the run reads from the hub is
    checked in the local cache when the run starts (grpo_repro.prefetch.missing), never in a dry run."""
    from pathlib import Path

    from grpo_repro.models import check_model_source

    data = config["data"]
    for split, path in source(config).paths(data).items():
        key = source(config).path_keys[split]
        if path is not None and not Path(path).is_file():
            raise ValueError(f"config key 'data.{key}': file {path} does not exist")
        if path is not None and Path(path).stat().st_size == 0:
            raise ValueError(f"config key 'data.{key}': file {path} is empty")
    model = config["model"]["name_or_path"]
    if model is not None:
        check_model_source(model)  # a local directory; a hub id: the start check


def format_prompt(question: str, prompt_cfg: dict, tokenizer=None) -> str:
    """Render one question. template=plain: "[system\\n]question instruction\\n";
    template=chat: the tokenizer's chat template with the generation prompt appended."""
    user = f"{question} {prompt_cfg['instruction']}".strip()
    if prompt_cfg["template"] == "plain":
        system = prompt_cfg.get("system")
        return (f"{system}\n" if system else "") + user + "\n"
    if tokenizer is None or not getattr(tokenizer, "chat_template", None):
        raise ValueError(
            "prompt.template=chat needs a tokenizer with a chat template "
            "(the organism's word-level tokenizer has none: use prompt.template=plain)"
        )
    messages = (
        [{"role": "system", "content": prompt_cfg["system"]}] if prompt_cfg.get("system") else []
    )
    messages.append({"role": "user", "content": user})
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
