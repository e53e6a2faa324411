"""Data source `gsm8k` (Sec. 6): GSM8K's grade-school math word problems, whose gold solutions end in
'#### <number>', from local JSONL files (config keys data.train_path / data.test_path) or, when no
path is given, from the Hugging Face hub (data.hub_id, config 'main', at data.hub_revision), read
from the local cache that the prefetch fills (grpo_repro.hub). Its reader (`read_jsonl`, `from_hub`,
`load_gsm8k`) and its record (SOURCE, grpo_repro.data.sources) are this one module.
Each loaded record is {"prompt_id", "question", "answer", "gold"}, where gold is the normalised
number after '####' (`reward.gold_number`). Bad input raises `DataError` naming file and line.
"""

from __future__ import annotations

from pathlib import Path

from grpo_repro import io
from grpo_repro.data.sources import PATH_KEYS, Source
from grpo_repro.io import DataError
from grpo_repro.reward import gold_number

JSONL_FORMAT = (
    'one JSON object per line with string fields "question" and "answer", the answer '
    'ending in "#### <number>" as in openai/gsm8k, e.g. '
    '{"question": "Tom has 3 apples and buys 2. How many?", "answer": "3+2=5\\n#### 5"}'
)


def _check_record(record: dict, where: str) -> dict:
    for key in ("question", "answer"):
        if not isinstance(record.get(key), str) or not record[key].strip():
            raise DataError(f"{where}: missing or empty string field '{key}'")
    try:
        gold_number(record["answer"])
    except ValueError:
        raise DataError(
            f"{where}: gold answer has no number after '####': {record['answer'][-60:]!r}"
        ) from None
    return record


def read_jsonl(path: str | Path) -> list[dict]:
    """GSM8K records (with 'question' and a '#### <number>' 'answer') from a JSONL file.

    Blank lines are skipped. Raises DataError naming `path` (and line) for a missing or empty
    file, a malformed JSON line, a missing field or a gold answer without a number.
    """
    return io.read_jsonl(path, check=_check_record, expected=JSONL_FORMAT)


def from_hub(split: str, hub_id: str, revision: str | None = None) -> list[dict]:
    """The checked rows of split `split` of the hub dataset `hub_id` (config main) at `revision`,
    from the local cache (grpo_repro.hub.dataset_split: jobs never reach the hub); DataError
    naming the prefetch, or the config key of a local file instead, when it is not cached."""
    from grpo_repro.hub import HubError, dataset_split

    key = f"data.{split}_path" if split in ("train", "test") else "data.train_path / data.test_path"
    try:
        table = dataset_split(hub_id, "main", revision, split)
    except (HubError, ValueError, OSError) as err:  # not cached, no such split
        raise DataError(
            f"cannot load GSM8K split '{split}' of the hub dataset '{hub_id}' ({err}). Or provide "
            f"it locally: set config key {key} to a JSONL file ({JSONL_FORMAT})."
        ) from None
    return [
        _check_record(dict(row), f"{hub_id}[{split}] row {i + 1}") for i, row in enumerate(table)
    ]


def load_gsm8k(
    split: str,
    local_path: str | Path | None = None,
    hub_id: str = "openai/gsm8k",
    n: int | None = None,
    revision: str | None = None,
) -> list[dict]:
    """The first `n` (None: all) problems of a GSM8K split, from `local_path` or the hub's cache.

    Records: {"prompt_id": f"{split}_{i:05d}", "question", "answer", "gold"}. Raises DataError if
    the data cannot be read or the split holds fewer than `n` problems.
    """
    from grpo_repro.data.sources import numbered

    raw = read_jsonl(local_path) if local_path is not None else from_hub(split, hub_id, revision)
    source = local_path if local_path is not None else f"{hub_id}[{split}]"
    return numbered(raw, split, n, gold_number, str(source))


def gsm8k_rows(data: dict, split: str) -> list[dict]:
    """GSM8K's rows of `split`: its local JSONL file (data.train_path / data.test_path) or the
    hub dataset data.hub_id (config main) at data.hub_revision, from the local cache; each
    checked."""
    path = data[PATH_KEYS[split]]
    if path is not None:
        return read_jsonl(path)
    return from_hub(split, data["hub_id"], data.get("hub_revision"))


SOURCE = Source(
    "gsm8k",
    "GSM8K",
    rows=gsm8k_rows,
    path_keys=PATH_KEYS,
    hub_config="main",
    published={"train": 7473, "test": 1319},  # openai/gsm8k, config main
    file_format="fields question, answer",
    # the longest question of both splits is 985 characters (about 270 tokens of Qwen2.5's
    # tokenizer, which splits numbers into digits), plus the system prompt, the instruction and the
    # chat template's markers
    max_prompt_tokens=384,
)
