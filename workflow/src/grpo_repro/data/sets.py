"""Prompt sets of the experiment (Sec. 6), each record carrying its rendered prompt so that SFT,
training and evaluation see the same text:
  train  the prompts GRPO trains on (one epoch: each seen once; the paper's regime)
  val    a validation split from the training distribution (settings are chosen on it, never on
         the test split; evaluated when eval.splits holds `val`)
  test   held-out problems: the headline
  pool   a fixed, seeded sample of `train` (prompts training did see), tracked by evaluation as the
         `train` split; with train.on_pool GRPO trains on it alone, many epochs
  sft    the organism only: the worked solutions pi_ref learns from (disjoint from the others)
"""

from __future__ import annotations

import os
import random

from grpo_repro import io
from grpo_repro.data.prompts import format_prompt
from grpo_repro.data.sources import source

#: fields of every record of a prepared prompt set (results/data/*.jsonl)
PROMPT_FIELDS = ("prompt_id", "prompt", "gold")


def read_prompts(path) -> list[dict]:
    """Records of a prepared prompt set; DataError naming file and line on bad input."""
    return io.read_jsonl(path, required=PROMPT_FIELDS)


def raw_records(config: dict) -> dict:
    """{split: records} of the configured data source (grpo_repro.data.sources.SOURCES)."""
    return source(config).records(config)


def render(records: list[dict], prompt_cfg: dict, tokenizer=None) -> list[dict]:
    return [{**r, "prompt": format_prompt(r["question"], prompt_cfg, tokenizer)} for r in records]


def train_pool(train: list[dict], size: int | None, seed: int) -> list[dict]:
    """A fixed, seeded pool of `size` training records (all of them when size is None)."""
    if size is None or size >= len(train):
        return list(train)
    idx = sorted(random.Random(seed + 1).sample(range(len(train)), size))
    return [train[i] for i in idx]


def uses_hub(config: dict) -> bool:
    """The run may download something: a model given by name or path (a hub id?), or a split
    read from the hub."""
    hub_data = source(config).hub_id(config["data"]) is not None
    return config["model"]["name_or_path"] is not None or hub_data


def offline_if_local(config: dict) -> None:
    """HF_HUB_OFFLINE=1 (unless the user set it) for a run that reads nothing from the hub: the
    built model on local or generated data (transformers would otherwise spend ~25 s retrying)."""
    if not uses_hub(config):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")


def check_sources(config: dict, check_hub: bool = True) -> None:
    """Fail at workflow load, before any job, on a missing local data file or model (ValueError
    naming the config key). Hub ids are only checked when HF_HUB_OFFLINE=1 and check_hub is set
    (a dry run on an offline login node still builds the graph)."""
    from pathlib import Path

    from grpo_repro.models import check_model_source

    data = config["data"]
    for split, path in source(config).paths(data).items():
        key = source(config).path_keys[split]
        if path is not None and not Path(path).is_file():
            raise ValueError(f"config key 'data.{key}': file {path} does not exist")
        if path is not None and Path(path).stat().st_size == 0:
            raise ValueError(f"config key 'data.{key}': file {path} is empty")
    from grpo_repro.models import is_local

    model = config["model"]["name_or_path"]
    if model is not None and (check_hub or is_local(model)):
        check_model_source(model)
