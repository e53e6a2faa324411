"""Configuration: JSON-schema validation with errors that name the culprit key, file and line.

The schema (schemas/config.schema.yaml) fixes types, ranges and allowed names; `check()` adds the
cross-field rules a schema cannot state. The workflow (common.smk) calls `check()` before Snakemake's
own `validate()`, so a bad key stops the run before any job is scheduled.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from grpo_repro import variants as reg

SCHEMA_PATH = Path(str(resources.files("grpo_repro") / "schemas" / "config.schema.yaml"))


class ConfigError(ValueError):
    """An invalid configuration value; the message names the key (and file:line when known)."""


def load_schema() -> dict:
    """The schema with the variant names of the registry grpo_repro.variants filled in (read at
    call time): $defs variant (trained variants), one_anchor (of them, one KL anchor) and the
    {variant} alternation of fp_kind's pattern (one-anchor ones: the fixed-point stage's
    predictions and run settings have no two-KL alpha)."""
    schema = yaml.safe_load(SCHEMA_PATH.read_text())
    trained = [v for v in reg.VARIANTS if v.trained]
    defs = schema["$defs"]
    defs["variant"]["enum"] = [v.name for v in trained]
    one_anchor = [v.name for v in trained if v.anchor != "two_kl"]
    defs["one_anchor"]["enum"] = one_anchor
    alternation = "(" + "|".join(one_anchor) + ")"
    defs["fp_kind"]["pattern"] = defs["fp_kind"]["pattern"].replace("{variant}", alternation)
    return schema


@contextmanager
def schema_file():
    """Path of a temporary JSON file holding load_schema() (Snakemake's validate() reads a file),
    removed on exit."""
    fd, path = tempfile.mkstemp(prefix="grpo_repro-schema-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(load_schema(), f)
        yield path
    finally:
        os.unlink(path)


def load_yaml(path: str | Path) -> dict:
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"config file {path} does not exist")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise ConfigError(yaml_error_message(path, err)) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys")
    return data


def yaml_error_message(path: str | Path, err: yaml.YAMLError) -> str:
    """'file:line: not valid YAML (what)' of a YAML syntax error; a tab gets its own hint."""
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    if mark is None:
        return f"{path}: not valid YAML: {err}"
    what = " ".join(str(x) for x in (err.context, err.problem) if x) or str(err)
    lines = Path(path).read_text().splitlines()
    line = lines[mark.line] if mark.line < len(lines) else ""
    hint = " (a tab character: YAML indents with spaces only)" if "\t" in line else ""
    return f"{path}:{mark.line + 1}: not valid YAML: {what}{hint}: {line.strip()!r}"


def check_yaml_files(files: Iterable[str | Path]) -> None:
    """Raise ConfigError naming file and line of the first configuration file that is not valid
    YAML (Snakemake's own message names neither)."""
    for f in files:
        load_yaml(f)


def precedence(configfiles: list) -> list:
    """Snakemake's list of configuration files (workflow.configfiles) in the order they override
    each other: the Snakefile's `configfile:` is appended last but is overridden by every
    --configfile file, so it goes first (a key is then located in the file that set its value)."""
    files = list(configfiles)
    return files[-1:] + files[:-1]


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


def _where(keys: list, files: list[str | Path], config: dict | None = None, related=()) -> str:
    """' (file:line)' of the file that set this key: the last one holding the value in `config`.
    With `related` (other key paths of a cross-field rule), the last file that set any of them."""
    for f in reversed(files):
        for k in [keys, *related]:
            value = _lookup(config, k) if config is not None else _MISSING
            line = key_line(f, k)
            if line is None:
                continue
            try:
                in_file = _lookup(yaml.safe_load(Path(f).read_text()), k)
            except (OSError, yaml.YAMLError):
                in_file = _MISSING
            if value is _MISSING or in_file == value:
                return f" ({f}:{line}{'' if k == keys else f', {_dotted(k)}'})"
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
    found += _source_errors(data)
    src = _source(data)
    if src is not None and not src.word_level and word_level:
        found.append(
            (
                ["model", "name_or_path"],
                f"data.source={src.name} needs a model that reads English: a hub id or local "
                "path, or null with organism.tokenizer: bpe (a byte-level BPE the pipeline trains "
                f"on the {src.title} training text, config/smoke.yaml); the organism's word-level "
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
    found += _batch_errors(train)
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


def _source(data: dict):
    """The data source of data.source (grpo_repro.data.sources.SOURCES), None if unknown."""
    from grpo_repro.data.sources import SOURCES

    return SOURCES.get(data.get("source"))


def _source_errors(data: dict) -> list[tuple]:
    """A local path set for a source that reads no such file (the organism generates its
    problems): the file would be ignored. An overlay applied without its base does this
    (config/smoke.yaml's paths over config/config.yaml's organism)."""
    src = _source(data)
    if src is None:
        return []
    return [
        (
            ["data", key],
            f"is set, but data.source {src.name} reads no local file (its keys: "
            f"{', '.join(f'data.{k}' for k in src.path_keys.values()) or 'none'}): set "
            "data.source to a source that reads it, or this key to null (config/smoke.yaml "
            "applies on top of config/paper.yaml: --configfile config/paper.yaml "
            "config/smoke.yaml)",
            [["data", "source"]],
        )
        for key in ("train_path", "test_path")
        if data.get(key) is not None and key not in src.path_keys.values()
    ]


def _batch_errors(train: dict) -> list[tuple]:
    """The batch layout of GRPO training (grpo_repro.train.args.per_device_batch), in both
    train.vllm_mode layouts: the prompts_per_step x G completions of an optimizer step split into
    whole groups of G per training process and micro-step over train.devices processes x
    train.grad_accum micro-steps, i.e. prompts_per_step is a multiple of devices x grad_accum
    (the paper: 28 prompts = 7 devices x 4 micro-steps, 16 completions per device). The vLLM
    server of vllm_mode server runs on an extra GPU and is not a training process."""
    found = []
    g = train.get("num_generations", 2)
    prompts, accum, devices = (
        train.get(k, 1) for k in ("prompts_per_step", "grad_accum", "devices")
    )
    server = train.get("use_vllm") and train.get("vllm_mode") == "server"
    if prompts % (accum * devices):
        extra = " (the vLLM server's GPU of vllm_mode server is extra, not one of them)"
        found.append(
            (
                ["train", "prompts_per_step"],
                f"{prompts} prompts x {g} completions (num_generations) do not split into whole "
                f"groups of {g} per training process and micro-step over train.devices={devices} "
                f"processes{extra if server else ''} x train.grad_accum={accum} micro-steps: "
                f"prompts_per_step must be a multiple of devices x grad_accum = {accum * devices}",
                [["train", "devices"], ["train", "grad_accum"]],
            )
        )
    if train.get("vllm_mode") == "server" and not train.get("use_vllm"):
        found.append(
            (
                ["train", "vllm_mode"],
                "server starts a vLLM server on an extra GPU for generation, but train.use_vllm "
                "is false (the training processes generate themselves): set train.use_vllm: true, "
                "or train.vllm_mode: colocate",
                [["train", "use_vllm"]],
            )
        )
    return found


def check(config: dict, files: Iterable[str | Path] = ()) -> dict:
    """Validate `config`; raise ConfigError naming every bad key (with file:line when found)."""
    files = list(files)
    errors = renamed_errors(config) or schema_errors(config)
    if not errors:
        errors = cross_field_errors(config)
    if errors:
        lines = [
            f"  config key '{_dotted(e[0])}'{_where(e[0], files, config, *e[2:])}: {e[1]}"
            for e in errors
        ]
        raise ConfigError("invalid configuration:\n" + "\n".join(lines))
    return config


def located(
    keys: list, msg: str, files: Iterable[str | Path], config: dict, related=()
) -> ConfigError:
    """The ConfigError of one bad key, in check()'s format (key, file:line, what is wrong)."""
    where = _where(keys, list(files), config, related)
    return ConfigError(f"invalid configuration:\n  config key '{_dotted(keys)}'{where}: {msg}")


#: the Snakefile's `configfile:`: the base every configuration file overrides (config/paper.yaml
#: holds only what the paper changes in it, config/smoke.yaml only what the smoke test changes in
#: paper.yaml's result)
DEFAULT_FILE = Path(__file__).resolve().parents[3] / "config" / "config.yaml"


def compose(paths: Iterable[str | Path]) -> list[Path]:
    """The files a configuration is merged from, in order, as `snakemake --configfile A B` does:
    DEFAULT_FILE first (the Snakefile's configfile), then each of `paths` over the ones before
    (DEFAULT_FILE given again is not repeated)."""
    files = [DEFAULT_FILE]
    for p in map(Path, paths):
        if p.resolve() != DEFAULT_FILE:
            files.append(p)
    return files


def load(*paths: str | Path, overrides: dict | None = None) -> dict:
    """The configuration of `snakemake --configfile PATH...`: DEFAULT_FILE, then each of `paths`
    merged over the ones before (`merge`, as Snakemake merges them), then `overrides` (a nested
    dict); validated, an error naming the key and the file and line that set it. The paper's run
    is load("config/paper.yaml"), the smoke test's load("config/paper.yaml", "config/smoke.yaml")."""
    files = compose(paths)
    config: dict = {}
    for f in files:
        config = merge(config, load_yaml(f))
    if overrides:
        config = merge(config, overrides)
    return check(config, files)


def merge(base: dict, update: dict) -> dict:
    """`update` merged over `base` as Snakemake merges configuration files
    (snakemake.utils.update_config): mappings key by key, recursively; any other value (a list, a
    scalar, null) replaces the base's."""
    out = dict(base)
    for k, v in update.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def eval_temperature(config: dict) -> float:
    t = config["eval"]["temperature"]
    return config["train"]["temperature"] if t is None else t


#: settings that never change a job's results, only how fast it runs (eval.batch_prompts) or what
#: it reports while it runs (train.report_to, the experiment tracker): not a job's params, so that
#: changing them reruns nothing (Snakemake reruns a job whose params changed; a rule passes these
#: as resources or reads them with `speed_setting`, which are no rerun trigger)
SPEED_ONLY = {"eval": ("batch_prompts",), "train": ("report_to",)}


def speed_setting(config: dict, section: str, key: str):
    """A speed-only setting (SPEED_ONLY) of the configuration."""
    assert key in SPEED_ONLY[section], f"{section}.{key} is not a speed-only setting"
    return config[section][key]


def without_speed_only(config: dict) -> dict:
    """The configuration less its speed-only settings (SPEED_ONLY): what a record of the run's
    settings (summary.json) holds, so that changing them reruns nothing."""
    return {
        k: ({kk: vv for kk, vv in v.items() if kk not in SPEED_ONLY[k]} if k in SPEED_ONLY else v)
        for k, v in config.items()
    }


def eval_settings(config: dict) -> dict:
    """What evaluation's results depend on: seed, the eval section (less its speed-only keys),
    the resolved temperature, and train.bf16 and train.use_vllm (eval.dtype: rollout's dtype,
    grpo_repro.models.rollout_dtype)."""
    return {
        "seed": config["seed"],
        "eval": without_speed_only(config)["eval"],
        "temperature": eval_temperature(config),
        "bf16": config["train"]["bf16"],
        "use_vllm": config["train"]["use_vllm"],
    }


def train_settings(config: dict, variant: str | None = None) -> dict:
    """What a GRPO run of `variant` reads (its params and resume fingerprint): the data seed,
    the train section without the list of GRPO seeds (adding a seed retrains only that seed),
    without its speed-only keys (SPEED_ONLY: train.report_to reaches the run through
    grpo_repro.train.launch.launch's `report_to`) and, unless `variant` is a two-KL variant
    (Lemma 2, Thm 9), without train.two_kl_alpha (changing it retrains no other variant); and the
    reward's answer mode."""
    two_kl = variant is not None and reg.get(variant).anchor == "two_kl"
    drop = {"seeds"} if two_kl else {"seeds", "two_kl_alpha"}
    train = {k: v for k, v in without_speed_only(config)["train"].items() if k not in drop}
    return {
        "seed": config["seed"],
        "train": train,
        "data": {"answer_mode": config["data"]["answer_mode"]},
    }


def main(argv: list[str] | None = None) -> int:
    """`python -m grpo_repro.config FILE...`: the configuration files merged in order over
    config/config.yaml (`load`, as `snakemake --configfile FILE...` merges them) and checked; every error
    names file and line. Snakemake reads --configfile files before the workflow loads and names
    neither file nor line on a YAML syntax error: this command does."""
    import sys

    files = list(sys.argv[1:] if argv is None else argv)
    try:
        load(*files)
    except ConfigError as err:
        print(err, file=sys.stderr)
        return 1
    print(f"valid configuration: {' + '.join(map(str, compose(files)))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
