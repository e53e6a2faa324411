"""Sizes of the prompt sets (Sec. 6), known when the workflow loads, before any job.

The data sizes of the configuration (data.n_train, data.n_val, data.n_test) are checked against
what a file source holds (grpo_repro.data.sources.Source.split_sizes): a local JSONL is read and
validated in full (a bad record is named with file and line now, not when data_prepare runs), the
hub dataset's split sizes come from its metadata (cache or hub). A size the data cannot hold
stops the workflow before data_prepare starts: Snakemake removes a job's old outputs when the job starts, so a check at job time would
already have lost the finished results/data/ and everything downstream of it.

One epoch (train.max_steps: null) counts only the prompts GRPO trains on: with a file source
(GSM8K) and n_train: null, the training split minus the n_val validation problems.
"""

from __future__ import annotations

from grpo_repro.config import located
from grpo_repro.data.sources import source


def training_size(config: dict, sizes: dict | None) -> int:
    """Prompts GRPO's training split holds: data.n_train, or (a file source, n_train null) its
    training split minus the n_val validation problems."""
    data = config["data"]
    if data["n_train"] is not None:
        return int(data["n_train"])
    return sizes["train"] - (data["n_val"] or 0)


def n_epoch_prompts(config: dict, sizes: dict | None = None) -> int:
    """Prompts in one GRPO epoch (the checkpoint schedule needs it before any job runs): the
    training split, or the training pool with train.on_pool."""
    data = config["data"]
    if sizes is None and data["n_train"] is None:
        sizes = source(config).split_sizes(config)
    n = training_size(config, sizes)
    if config["train"]["on_pool"] and data["train_pool"] is not None:
        return min(data["train_pool"], n)
    return n


def check_sizes(config: dict, files=(), check_hub: bool = True) -> dict | None:
    """The split sizes of a file source (None for a generated one, the organism), after checking
    that data.n_test, data.n_train + data.n_val fit the data and that n_val leaves training (and
    SFT) data; ConfigError naming the key, file and line."""
    data, src = config["data"], source(config)
    sizes = src.split_sizes(config, check_hub)
    if sizes is None:
        return None
    test_src, train_src = src.origin(data, "test"), src.origin(data, "train")
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
