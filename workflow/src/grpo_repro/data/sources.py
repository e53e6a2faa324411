"""Data sources of the prompt sets (Sec. 6): the registry SOURCES, one `Source` per data.source.

Each source is a module of its own, grpo_repro.data.source_records.<name>, defining SOURCE: a new
source is one more module, and the workflow reruns only the jobs of a configuration that reads it.
A source says where its problems come from and how to read them: its raw records per split
(`Source.records`), its split sizes before any job runs (`Source.split_sizes`: None for generated
problems, which the configuration sizes), the config keys of its local files (`path_keys`), the
hub dataset a null path falls back to (data.hub_id with `hub_config`; None: no hub), and its
answer format (`gold`: the gold number of a worked solution). Two sources ship:
  organism  GSM8K-format problems the pipeline generates (grpo_repro.data.organism)
  gsm8k     GSM8K, from local JSONL files (data.train_path, data.test_path) or the hub
Both end their solutions in GSM8K's '#### <number>' (grpo_repro.reward.gold_number).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from grpo_repro.io import DataError
from grpo_repro.reward import gold_number

#: the config keys (of the data section) of a file source's local files, by split
PATH_KEYS = {"train": "train_path", "test": "test_path"}


@dataclass(frozen=True)
class Source:
    """One data source. A generated source has `generate` (config -> {split: records}); a file
    source has `rows` ((data section, split) -> [{"question", "answer"}], from the split's local
    file or the hub), and its records are numbered and split by `records`."""

    name: str
    title: str  # how messages name it
    generate: Callable[[dict], dict] | None = None
    rows: Callable[[dict, str], list[dict]] | None = None
    path_keys: Mapping[str, str] = field(default_factory=dict)  # split -> data key of its file
    hub_config: str | None = None  # the hub dataset's config name; None: local files only
    published: Mapping[str, int] = field(default_factory=dict)  # sizes a dry run may assume
    file_format: str = ""  # what a local file holds, for messages
    gold: Callable[[str], str] = gold_number  # answer format: a solution's gold number
    word_level: bool = False  # the organism's word-level tokenizer reads its questions
    #: an upper bound on a rendered prompt's tokens (question, instruction, system prompt and chat
    #: template), the sequence length of the memory model (grpo_repro.memory.seq_tokens)
    max_prompt_tokens: int = 0

    def paths(self, data: dict) -> dict[str, str | None]:
        """{split: local file or None} of the configured data section."""
        return {split: data[key] for split, key in self.path_keys.items()}

    def hub_id(self, data: dict) -> str | None:
        """The hub dataset the run reads (a split without a local file), else None."""
        if self.hub_config is None or None not in self.paths(data).values():
            return None
        return data["hub_id"]

    def origin(self, data: dict, split: str) -> str:
        """Where a split's problems come from: its local file, or `hub_id[split]` (with
        `@revision` when data.hub_revision pins one)."""
        rev = data.get("hub_revision")
        return self.paths(data)[split] or f"{data['hub_id']}{f'@{rev}' if rev else ''}[{split}]"

    def records(self, config: dict) -> dict:
        """{split: raw records} (prompt_id, question, answer, gold, ...). A file source: train =
        the first n_train problems of its training split minus the last n_val, kept as `val`;
        test = the first n_test of its test split (None: all)."""
        if self.generate is not None:
            return self.generate(config)
        data = config["data"]
        n_val = data["n_val"] or 0
        n = None if data["n_train"] is None else data["n_train"] + n_val
        train = self.split(data, "train", n)
        test = self.split(data, "test", data["n_test"])
        val = [
            {**r, "prompt_id": f"val_{i:05d}"} for i, r in enumerate(train[len(train) - n_val :])
        ]
        return {"train": train[: len(train) - n_val], "val": val, "test": test}

    def split(self, data: dict, split: str, n: int | None) -> list[dict]:
        """The first `n` (None: all) problems of one split of a file source."""
        return numbered(self.rows(data, split), split, n, self.gold, self.origin(data, split))

    def split_sizes(self, config: dict, check_hub: bool = True) -> dict[str, int] | None:
        """{split: problems} of a file source (None: generated). A local file is read and
        validated in full (DataError naming file and line); the hub's sizes come from the cached
        dataset's metadata, and a dataset not cached is an error naming the split's path key
        (check_hub False, as the workflow loads: the published sizes with a warning; the run's start
        checks again with check_hub, grpo_repro.data.sizes.check_sizes)."""
        if self.generate is not None:
            return None
        data, out = config["data"], {}
        for split, path in self.paths(data).items():
            if path is not None:
                out[split] = len(self.rows(data, split))
                continue
            try:
                out[split] = hub_split_size(self, data, split)
            except ValueError:
                if check_hub or split not in self.published:
                    raise
                print(
                    f"warning: {self.title} split sizes of '{data['hub_id']}' unknown (not in the "
                    f"local cache); assuming the published {self.published[split]} (a run checks at start)",
                    file=sys.stderr,
                )
                out[split] = self.published[split]
        return out


def numbered(rows: list[dict], split: str, n: int | None, gold, where: str) -> list[dict]:
    """The first `n` (None: all) rows as records {"prompt_id": f"{split}_{i:05d}", "question",
    "answer", "gold": gold(answer)}; DataError naming `where` if the split holds fewer."""
    if n is not None and n < 1:
        raise ValueError(f"n must be a positive integer or None, got {n!r}")
    if n is not None and n > len(rows):
        raise DataError(
            f"{where}: asked for the first {n} problems but the split holds {len(rows)}"
        )
    return [
        {
            "prompt_id": f"{split}_{i:05d}",
            "question": r["question"],
            "answer": r["answer"],
            "gold": gold(r["answer"]),
        }
        for i, r in enumerate(rows[:n])
    ]


def hub_split_size(source: Source, data: dict, split: str) -> int:
    """Problems in split `split` of the hub dataset data.hub_id (config source.hub_config) at
    data.hub_revision, from its metadata in the local cache (jobs never reach the hub: the prefetch
    fills it, grpo_repro.hub); ValueError naming the config key when it is not cached."""
    from grpo_repro.hub import HubError, dataset_sizes

    key = f"data.{source.path_keys[split]}"
    hub_id = data["hub_id"]
    try:
        return dataset_sizes(hub_id, source.hub_config, data.get("hub_revision"))[split]
    except (HubError, KeyError) as err:
        raise ValueError(
            f"config key '{key}' is null, so {source.title} split '{split}' comes from the hub "
            f"dataset '{hub_id}' (data.hub_id), which the local cache does not hold "
            f"({type(err).__name__}: {err}): fetch it with the prefetch (python -m grpo_repro.prefetch "
            f"--configfile ...), or set {key} to a local JSONL file ({source.file_format})"
        ) from None


def _discover() -> dict[str, Source]:
    """{name: Source} of every module of grpo_repro.data.source_records (each defines SOURCE),
    imported by name, so a job's code inputs hold only the configured source's module
    (workflow/rules/common.smk `code`)."""
    from grpo_repro.data import source_records

    found = {}
    for info in sorted(pkgutil.iter_modules(source_records.__path__), key=lambda m: m.name):
        rec = importlib.import_module(f"{source_records.__name__}.{info.name}").SOURCE
        if rec.name != info.name:
            raise ValueError(f"{source_records.__name__}.{info.name}: SOURCE is named {rec.name!r}")
        found[rec.name] = rec
    return found


def __getattr__(name: str):
    """SOURCES ({name: Source}), discovered on first use: a record module imports this one (its
    Source), so discovering while this module loads would import a record half made."""
    if name == "SOURCES":
        found = globals()["SOURCES"] = _discover()
        return found
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def record_module(name: str) -> str:
    """The module that defines source `name`'s record."""
    return f"grpo_repro.data.source_records.{name}"


def source(config: dict) -> Source:
    """The Source of the configuration's data.source."""
    return sys.modules[__name__].SOURCES[config["data"]["source"]]
