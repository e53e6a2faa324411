"""The configuration's value checks (grpo_repro.config.check reports them with file and line):
the JSON schema (schemas/config.schema.yaml: types, ranges, allowed names), keys renamed since,
and the cross-field rules a schema cannot state (the fixed-point steps, the eval splits, and, from
grpo_repro.config_layout, the data source's files and the batch arithmetic of both layouts).
Each check returns (key path, message[, related key paths]); nothing here reads a file's lines.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from grpo_repro import variants as reg
from grpo_repro.config_layout import (
    batch_errors,
    data_source,
    organism_errors,
    size_errors,
    source_errors,
    vllm_errors,
)

SCHEMA_PATH = Path(str(resources.files("grpo_repro") / "schemas" / "config.schema.yaml"))


def load_schema() -> dict:
    """The configuration's JSON schema (schemas/config.schema.yaml, complete on disk: Snakemake's
    validate() reads the same file)."""
    return yaml.safe_load(SCHEMA_PATH.read_text())


def _lookup(data, keys):
    for k in keys:
        try:
            data = data[k]
        except (KeyError, IndexError, TypeError):
            return _MISSING
    return data


_MISSING = object()


def _dotted(keys: Iterable[Any]) -> str:
    out = ""
    for k in keys:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
    return out or "<top level>"


#: the integers every setting must stay within: a seed goes to numpy's and TRL's set_seed (below
#: 2**32), a size or step count to torch and numpy (int64) and to SLURM; int32 holds every one
INT_BOUND = 2**31 - 1


def number_errors(config, keys: tuple = ()) -> list[tuple[list, str]]:
    """One rule over every number of the configuration, whatever its key: finite (JSON Schema's
    comparisons are false for NaN and an exclusive minimum admits infinity, so a range alone lets
    YAML's .nan and .inf through), and an integer within INT_BOUND."""
    import math

    if isinstance(config, dict):
        return [e for k, v in config.items() for e in number_errors(v, (*keys, k))]
    if isinstance(config, list):
        return [e for i, v in enumerate(config) for e in number_errors(v, (*keys, i))]
    if isinstance(config, float) and not math.isfinite(config):
        return [(list(keys), f"{config} is not a finite number (YAML's .inf and .nan are not)")]
    if isinstance(config, int) and not isinstance(config, bool) and abs(config) > INT_BOUND:
        return [(list(keys), f"{config} is beyond {INT_BOUND}, more than any seed or size takes")]
    return []


def schema_errors(config: dict) -> list[tuple[list, str]]:
    """All schema violations as (key path, message), most specific first; a non-finite or
    out-of-bound number (number_errors) first of all, for any key."""
    found = number_errors(config)
    if found:
        return found
    validator = jsonschema.Draft202012Validator(load_schema())
    for err in sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path)):
        keys = list(err.absolute_path)
        if err.validator == "additionalProperties":
            extra = sorted(set(err.instance) - set(err.schema.get("properties", {})))
            for name in extra:
                found.append((keys + [name], f"unknown key '{name}'"))
            continue
        if err.validator == "required":
            found.append((keys, err.message))
            continue
        if err.validator in ("oneOf", "anyOf") and err.context:
            best = jsonschema.exceptions.best_match(err.context)
            found.append((keys, f"{json.dumps(err.instance)} is invalid: {best.message}"))
            continue
        found.append((keys, err.message + _number_hint(err.instance)))
    return found


def _number_hint(value) -> str:
    """A hint for a number YAML read as a string (YAML 1.1: 1e-5 is a string, 1.0e-5 a float)."""
    if not isinstance(value, str):
        return ""
    try:
        number = float(value)
    except ValueError:
        return ""
    return (
        f" (YAML reads {value} as a string: write the number with a dot and a signed exponent, "
        f"e.g. {number:.1e}".replace("e-0", "e-").replace("e+0", "e+")
        + ")"
    )


#: keys that were renamed: old key path -> the new key's dotted name (refused at load time)
RENAMED_KEYS = {
    ("data", "gsm8k_train_path"): "data.train_path",
    ("data", "gsm8k_test_path"): "data.test_path",
    ("data", "gsm8k_hub_id"): "data.hub_id",
}


def renamed_errors(config: dict) -> list[tuple[list, str]]:
    """Keys and values that were renamed, checked before the schema so that the message names the
    new one (and the file and line that still set the old one)."""
    found = [
        (list(old), f"was renamed: use {new} (the same value)")
        for old, new in RENAMED_KEYS.items()
        if _lookup(config, old) is not _MISSING
    ]
    if _lookup(config, ["eval", "dtype"]) == "training":
        why = (
            "rollout (the precision training's rollouts are sampled with, no autocast), or float32"
        )
        found.append((["eval", "dtype"], f"'training' was renamed: use {why} or bfloat16"))
    return found


def cross_field_errors(config: dict) -> list[tuple[list, str]]:
    """Rules that span several keys."""
    found = []
    org = config.get("organism", {})
    if org.get("min_steps", 1) > org.get("max_steps", 1):
        found.append((["organism", "min_steps"], "must be <= organism.max_steps"))
    data, model = config.get("data", {}), config.get("model", {})
    word_level = model.get("name_or_path") is None and org.get("tokenizer") == "word"
    tokenizer_keys = [["data", "source"], ["organism", "tokenizer"]]
    found += source_errors(data)
    found += size_errors(data)
    found += organism_errors(config)
    src = data_source(data)
    if not src.word_level and word_level:
        found.append(
            (
                ["model", "name_or_path"],
                f"data.source={src.name} needs a model that reads English: a hub id or local "
                "path, or null with organism.tokenizer: bpe (a byte-level BPE the pipeline trains "
                f"on the {src.title} training text); the organism's word-level "
                f"vocabulary cannot read {src.title}",
                tokenizer_keys,
            )
        )
    if config.get("prompt", {}).get("template") == "chat" and word_level:
        found.append(
            (
                ["prompt", "template"],
                "chat needs a tokenizer with a chat template: the organism's word-level "
                "tokenizer (organism.tokenizer: word) has none; use prompt.template: plain, or "
                "organism.tokenizer: bpe (Qwen2.5's chat template)",
                [["organism", "tokenizer"], ["model", "name_or_path"]],
            )
        )
    if "val" in config.get("eval", {}).get("splits", []) and not data.get("n_val"):
        found.append(
            (
                ["eval", "splits"],
                "holds val but data.n_val is 0 (no validation split): set data.n_val > 0 or "
                "drop val from eval.splits",
                [["data", "n_val"]],
            )
        )
    train = config.get("train", {})
    if train.get("save_steps", 1) > (train.get("max_steps") or float("inf")):
        found.append(
            (["train", "save_steps"], "must be <= train.max_steps (no checkpoint would be saved)")
        )
    if train.get("save_steps", 1) % train.get("num_iterations", 1):
        found.append(
            (
                ["train", "save_steps"],
                "must be a multiple of train.num_iterations (mu): a run "
                "resumed from a checkpoint must start at a fresh generation batch",
            )
        )
    found += batch_errors(train)
    found += vllm_errors(config)
    fp = config.get("fixed_point", {})
    for name, change in {"": {}, **fp.get("factors", {})}.items():
        mu = change.get("num_iterations", train.get("num_iterations", 1))
        if fp.get("save_steps", 1) % mu:
            where = ["fixed_point", "factors", name] if name else ["train", "num_iterations"]
            found.append(
                (["fixed_point", "save_steps"], f"must be a multiple of mu ({_dotted(where)})")
            )
    if 2 * fp.get("save_steps", 1) > fp.get("max_steps", 2):
        found.append(
            (
                ["fixed_point", "save_steps"],
                "at most half of fixed_point.max_steps: the "
                "plateau is read from the last two checkpoints",
            )
        )
    found += compact_errors(fp.get("compact"), train.get("num_iterations", 1))
    long = fp.get("long_steps")
    if long is not None and (long <= fp.get("max_steps", 0) or long % fp.get("save_steps", 1)):
        found.append(
            (
                ["fixed_point", "long_steps"],
                "must be a multiple of fixed_point.save_steps above fixed_point.max_steps",
            )
        )
    pool_n = data.get("train_pool")
    if pool_n is not None and fp.get("n_prompts", 0) > pool_n:
        found.append((["fixed_point", "n_prompts"], f"must be <= data.train_pool ({pool_n})"))
    fp_batch = fp.get("prompts_per_step") or train.get("prompts_per_step", 1)
    if fp.get("n_prompts", 10**9) < fp_batch:
        found.append(
            (["fixed_point", "n_prompts"], f"must be >= fixed_point.prompts_per_step ({fp_batch})")
        )
    missing = set(config.get("replicates", {}).get("variants") or []) - set(
        config.get("variants", [])
    )
    if missing:
        found.append((["replicates", "variants"], f"{sorted(missing)} not in `variants`"))
    ev = config.get("eval", {})
    if not data.get("n_val") and "val" in (ev.get("temperature_splits") or []):
        found.append(
            (["eval", "temperature_splits"], "lists val but data.n_val is 0 (no val split)")
        )
    if (ev.get("val_samples") or 0) > ev.get("samples", float("inf")):
        found.append(
            (
                ["eval", "val_samples"],
                f"must be <= eval.samples ({ev['samples']})",
                [["eval", "samples"]],
            )
        )
    pool, n_train = data.get("train_pool"), data.get("n_train")
    if pool is not None and n_train is not None and pool > n_train:
        found.append((["data", "train_pool"], f"must be <= data.n_train ({n_train})"))
    found += zero_errors(config)
    return found


def zero_errors(config: dict) -> list:
    """The zero-success study (grpo_repro.zero) screens pi_ref's test table."""
    if config.get("zero") and "test" not in config.get("eval", {}).get("splits", []):
        return [(["zero"], "screens pi_ref's test table: eval.splits must hold test")]
    return []


def compact_errors(c: dict | None, mu: int) -> list:
    """fixed_point.compact: checkpoints at fresh generation batches, a plateau of two checkpoints,
    and a run kind with an interior fixed point (anchored on pi_ref: Thm 2-3; mirror has none)."""
    if not c:
        return []
    where, found = ["fixed_point", "compact"], []
    if c["save_steps"] % mu:
        found.append(([*where, "save_steps"], f"must be a multiple of train.num_iterations ({mu})"))
    if 2 * c["save_steps"] > c["max_steps"]:
        found.append(
            (
                [*where, "save_steps"],
                "at most half of fixed_point.compact.max_steps: the plateau is read from the "
                "last two checkpoints",
            )
        )
    variant = c["run"].split("/")[0]
    if reg.plateau_base(variant) is None:
        found.append(([*where, "run"], f"{variant} has no interior fixed point (Thm 5)"))
    return found
