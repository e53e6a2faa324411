"""Data source `gsm8k`: GSM8K (Sec. 6), from local JSONL files (data.train_path, data.test_path)
or the hub dataset data.hub_id, config main (grpo_repro.data.gsm8k reads and checks them)."""

from grpo_repro.data.sources import PATH_KEYS, Source


def gsm8k_rows(data: dict, split: str) -> list[dict]:
    """GSM8K's rows of `split`: its local JSONL file (data.train_path / data.test_path) or the
    hub dataset data.hub_id (config main) at data.hub_revision, from the local cache; each checked
    (grpo_repro.data.gsm8k)."""
    from grpo_repro.data import gsm8k

    path = data[PATH_KEYS[split]]
    if path is not None:
        return gsm8k.read_jsonl(path)
    return gsm8k.from_hub(split, data["hub_id"], data.get("hub_revision"))


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
