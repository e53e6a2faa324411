"""Sizes of the prompt sets (Sec. 6), known when the workflow loads, before any job.

The data sizes of the configuration (data.n_train, data.n_val, data.n_test) are checked against
what the source holds: a local GSM8K JSONL is read and validated in full (a bad record is named
with file and line now, not when data_prepare runs), the hub dataset's split sizes come from its
metadata (cache or hub). A size the data cannot hold stops the workflow before data_prepare
starts: Snakemake removes a job's old outputs when the job starts, so a check at job time would
already have lost the finished results/data/ and everything downstream of it.

One epoch (train.max_steps: null) counts only the prompts GRPO trains on: with GSM8K and
n_train: null, the training split minus the n_val validation problems.
"""

from __future__ import annotations

import sys

from grpo_repro.config import located

#: the published sizes of openai/gsm8k (config main); only a dry run without the hub's metadata
#: uses them, to draw the graph
GSM8K_PUBLISHED = {"train": 7473, "test": 1319}


def gsm8k_sizes(config: dict, check_hub: bool = True) -> dict[str, int]:
    """{"train": problems, "test": problems} of the configured GSM8K source. A local file is read
    and validated in full (DataError naming file and line); the hub's sizes come from the
    dataset's metadata, and a hub that cannot answer is an error naming data.gsm8k_*_path (a dry
    run, check_hub False, falls back to the published sizes with a warning)."""
    from grpo_repro.data.gsm8k import read_jsonl

    data, out = config["data"], {}
    for split in ("train", "test"):
        path = data[f"gsm8k_{split}_path"]
        if path is not None:
            out[split] = len(read_jsonl(path))
            continue
        try:
            out[split] = hub_split_size(data["gsm8k_hub_id"], split)
        except ValueError:
            if check_hub:
                raise
            print(
                f"warning: GSM8K split sizes of '{data['gsm8k_hub_id']}' unknown (hub not "
                f"reachable); the dry run assumes the published {GSM8K_PUBLISHED[split]}",
                file=sys.stderr,
            )
            out[split] = GSM8K_PUBLISHED[split]
    return out


def hub_split_size(hub_id: str, split: str) -> int:
    """Problems in split `split` of the hub dataset `hub_id` (config main), from its metadata in
    the local cache or on the hub; ValueError naming the config key when neither answers."""
    key = f"data.gsm8k_{split}_path"
    try:
        import datasets

        info = datasets.load_dataset_builder(hub_id, "main").info
        return int(info.splits[split].num_examples)
    except Exception as err:  # offline and not cached, unknown id, no split metadata
        raise ValueError(
            f"config key '{key}' is null, so GSM8K split '{split}' comes from the hub dataset "
            f"'{hub_id}' (data.gsm8k_hub_id), which is neither cached nor reachable "
            f"({type(err).__name__}: {err}): set {key} to a local JSONL file (fields question, "
            "answer)"
        ) from None


def training_size(config: dict, sizes: dict | None) -> int:
    """Prompts GRPO's training split holds: data.n_train, or (GSM8K, n_train null) the training
    file minus the n_val validation problems."""
    data = config["data"]
    if data["n_train"] is not None:
        return int(data["n_train"])
    return sizes["train"] - (data["n_val"] or 0)


def n_epoch_prompts(config: dict, sizes: dict | None = None) -> int:
    """Prompts in one GRPO epoch (the checkpoint schedule needs it before any job runs): the
    training split, or the training pool with train.on_pool."""
    data = config["data"]
    if sizes is None and data["source"] == "gsm8k" and data["n_train"] is None:
        sizes = gsm8k_sizes(config)
    n = training_size(config, sizes)
    if config["train"]["on_pool"] and data["train_pool"] is not None:
        return min(data["train_pool"], n)
    return n


def check_sizes(config: dict, files=(), check_hub: bool = True) -> dict | None:
    """The GSM8K split sizes (None for the organism, whose problems are generated), after checking
    that data.n_test, data.n_train + data.n_val fit the data and that n_val leaves training (and
    SFT) data; ConfigError naming the key, file and line."""
    data = config["data"]
    if data["source"] != "gsm8k":
        return None
    sizes = gsm8k_sizes(config, check_hub)
    test_src = data["gsm8k_test_path"] or f"{data['gsm8k_hub_id']}[test]"
    train_src = data["gsm8k_train_path"] or f"{data['gsm8k_hub_id']}[train]"
    n_val = data["n_val"] or 0
    if data["n_test"] is not None and data["n_test"] > sizes["test"]:
        raise located(
            ["data", "n_test"],
            f"{data['n_test']} test problems asked, but {test_src} holds {sizes['test']}",
            files,
            config,
        )
    if data["n_train"] is not None and data["n_train"] + n_val > sizes["train"]:
        raise located(
            ["data", "n_train"],
            f"n_train + n_val = {data['n_train']} + {n_val} training problems asked, but "
            f"{train_src} holds {sizes['train']}",
            files,
            config,
            [["data", "n_val"]],
        )
    if training_size(config, sizes) < 1:
        raise located(
            ["data", "n_val"],
            f"{n_val} validation problems take all {sizes['train']} of {train_src}: nothing is "
            "left to train on (GRPO and the SFT of a built model)",
            files,
            config,
        )
    return sizes
