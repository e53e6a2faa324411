"""The rule data_prepare (Sec. 6 prompt sets): the organism's generated problems and word-level
tokenizer, or GSM8K (hub or local JSONL) with the model's tokenizer; every record gets its rendered
prompt, so SFT, GRPO and evaluation read the same text. Writes train, test and the training pool."""

from __future__ import annotations

import json

from grpo_repro import io
from grpo_repro.data import sets
from grpo_repro.data.prompts import format_prompt


def make_tokenizer(config: dict, records: list[dict]):
    """The organism's word-level tokenizer built from its texts, or the model's own tokenizer."""
    if config["data"]["source"] == "organism":
        from grpo_repro.data.tokenizer import build_tokenizer

        rendered = [format_prompt(r["question"], config["prompt"]) for r in records]
        return build_tokenizer(
            rendered + [r["answer"] for r in records], config["organism"]["max_value"]
        )
    from grpo_repro.models import load_tokenizer

    return load_tokenizer(config["model"]["name_or_path"])


def prepare(config: dict, train_path, test_path, pool_path, tokenizer_dir) -> dict:
    """Write the three prompt sets and the tokenizer that rendered them; returns their sizes.
    `config` holds the keys seed, data, prompt, organism and model."""
    train, test = sets.raw_records(config)
    tokenizer = make_tokenizer(config, train + test)
    tokenizer.save_pretrained(tokenizer_dir)  # a record of the tokenizer that rendered the prompts
    train, test = (
        sets.render(train, config["prompt"], tokenizer),
        sets.render(test, config["prompt"], tokenizer),
    )
    pool = sets.train_pool(train, config["data"]["train_pool"], config["seed"])
    for path, recs in ((train_path, train), (test_path, test), (pool_path, pool)):
        io.write_jsonl(path, recs)
    sizes = {"train": len(train), "test": len(test), "train_pool": len(pool)}
    print(json.dumps(sizes))
    return sizes
