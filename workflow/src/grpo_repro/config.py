"""Configuration: JSON-schema validation with errors that name the culprit key, file and line.

The schema (schemas/config.schema.yaml) fixes types, ranges and allowed names; `check()` adds the
cross-field rules a schema cannot state. The workflow (common.smk) calls `check()` before Snakemake's
own `validate()`, so a bad key stops the run before any job is scheduled.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

SCHEMA_PATH = Path(str(resources.files("grpo_repro") / "schemas" / "config.schema.yaml"))


class ConfigError(ValueError):
    """An invalid configuration value; the message names the key (and file:line when known)."""


def load_schema() -> dict:
    return yaml.safe_load(SCHEMA_PATH.read_text())


def load_yaml(path: str | Path) -> dict:
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"config file {path} does not exist")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from err
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys")
    return data


def key_line(path: str | Path, keys: Iterable[Any]) -> int | None:
    """1-based line of the nested key `keys` in the YAML file `path` (None if absent)."""
    try:
        node = yaml.compose(Path(path).read_text())
    except (OSError, yaml.YAMLError):
        return None
    line = None
    for key in keys:
        if isinstance(node, yaml.MappingNode):
            match = [(k, v) for k, v in node.value if k.value == str(key)]
            if not match:
                return line
            line = match[0][0].start_mark.line + 1
            node = match[0][1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _lookup(data, keys):
    for k in keys:
        try:
            data = data[k]
        except (KeyError, IndexError, TypeError):
            return _MISSING
    return data


_MISSING = object()


def _where(keys: list, files: list[str | Path], config: dict | None = None) -> str:
    """' (file:line)' of the file that set this key: the last one holding the value in `config`."""
    value = _lookup(config, keys) if config is not None else _MISSING
    for f in reversed(files):
        line = key_line(f, keys)
        if line is None:
            continue
        try:
            in_file = _lookup(yaml.safe_load(Path(f).read_text()), keys)
        except (OSError, yaml.YAMLError):
            in_file = _MISSING
        if value is _MISSING or in_file == value:
            return f" ({f}:{line})"
    return ""


def _dotted(keys: Iterable[Any]) -> str:
    out = ""
    for k in keys:
        out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
    return out or "<top level>"


def schema_errors(config: dict) -> list[tuple[list, str]]:
    """All schema violations as (key path, message), most specific first."""
    validator = jsonschema.Draft202012Validator(load_schema())
    found = []
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
        found.append((keys, err.message))
    return found


def cross_field_errors(config: dict) -> list[tuple[list, str]]:
    """Rules that span several keys."""
    found = []
    org = config.get("organism", {})
    if org.get("min_steps", 1) > org.get("max_steps", 1):
        found.append((["organism", "min_steps"], "must be <= organism.max_steps"))
    data, model = config.get("data", {}), config.get("model", {})
    word_level = model.get("name_or_path") is None and org.get("tokenizer") == "word"
    if data.get("source") == "gsm8k" and word_level:
        found.append(
            (
                ["model", "name_or_path"],
                "data.source=gsm8k needs a model that reads English: a hub id or local path, or "
                "null with organism.tokenizer: bpe (a byte-level BPE the pipeline trains on the "
                "GSM8K training text, config/smoke.yaml); the organism's word-level vocabulary "
                "cannot read GSM8K",
            )
        )
    if config.get("prompt", {}).get("template") == "chat" and word_level:
        found.append(
            (
                ["prompt", "template"],
                "chat needs a tokenizer with a chat template: the organism's word-level "
                "tokenizer (organism.tokenizer: word) has none; use prompt.template: plain, or "
                "organism.tokenizer: bpe (Qwen2.5's chat template)",
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
    total = train.get("prompts_per_step", 1) * train.get("num_generations", 2)
    per_step = train.get("grad_accum", 1) * train.get("devices", 1)
    if total % per_step or (total // per_step) % train.get("num_generations", 2):
        found.append(
            (
                ["train", "prompts_per_step"],
                "prompts_per_step * num_generations must split into whole "
                "groups per device and accumulation step (divisible by grad_accum * devices * G / G)",
            )
        )
    fp = config.get("fixed_point", {})
    if fp.get("save_steps", 1) % train.get("num_iterations", 1):
        found.append(
            (["fixed_point", "save_steps"], "must be a multiple of train.num_iterations (mu)")
        )
    if 2 * fp.get("save_steps", 1) > fp.get("max_steps", 2):
        found.append(
            (
                ["fixed_point", "save_steps"],
                "at most half of fixed_point.max_steps: the "
                "plateau is read from the last two checkpoints",
            )
        )
    pool_n = data.get("train_pool")
    if pool_n is not None and fp.get("n_prompts", 0) > pool_n:
        found.append((["fixed_point", "n_prompts"], f"must be <= data.train_pool ({pool_n})"))
    if fp.get("n_prompts", 10**9) < train.get("prompts_per_step", 1):
        found.append((["fixed_point", "n_prompts"], "must be >= train.prompts_per_step"))
    missing = set(config.get("replicates", {}).get("variants", [])) - set(
        config.get("variants", [])
    )
    if missing:
        found.append((["replicates", "variants"], f"{sorted(missing)} not in `variants`"))
    ev = config.get("eval", {})
    if not data.get("n_val") and "val" in (ev.get("temperature_splits") or []):
        found.append(
            (["eval", "temperature_splits"], "lists val but data.n_val is 0 (no val split)")
        )
    pool, n_train = data.get("train_pool"), data.get("n_train")
    if pool is not None and n_train is not None and pool > n_train:
        found.append((["data", "train_pool"], f"must be <= data.n_train ({n_train})"))
    return found


def check(config: dict, files: Iterable[str | Path] = ()) -> dict:
    """Validate `config`; raise ConfigError naming every bad key (with file:line when found)."""
    files = list(files)
    errors = schema_errors(config)
    if not errors:
        errors = cross_field_errors(config)
    if errors:
        lines = [
            f"  config key '{_dotted(k)}'{_where(k, files, config)}: {msg}" for k, msg in errors
        ]
        raise ConfigError("invalid configuration:\n" + "\n".join(lines))
    return config


def load(path: str | Path, overrides: dict | None = None) -> dict:
    """Load, merge overrides (nested dict) and validate a configuration file."""
    config = load_yaml(path)
    if overrides:
        config = merge(config, overrides)
    return check(config, [path])


def merge(base: dict, update: dict) -> dict:
    out = dict(base)
    for k, v in update.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def eval_temperature(config: dict) -> float:
    t = config["eval"]["temperature"]
    return config["train"]["temperature"] if t is None else t


def eval_settings(config: dict) -> dict:
    """What evaluation reads: seed, the eval section, the resolved temperature and train.bf16."""
    return {
        "seed": config["seed"],
        "eval": config["eval"],
        "temperature": eval_temperature(config),
        "bf16": config["train"]["bf16"],
    }
