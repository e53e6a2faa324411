"""Configuration: loading and merging the files (the default, then overlays), validation with errors
that name the culprit key, file and line, and the settings each job reads.

The value checks (schema, renamed keys, cross-field rules) are grpo_repro.config_checks; `check()`
runs them and names each culprit's file and line. The workflow (common.smk) calls it once, before any
job is scheduled: the schema's only pass (it holds no defaults: config/config.yaml, which every
configuration is merged over, holds every key's value).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from grpo_repro.config_checks import (
    _MISSING,
    _dotted,
    _lookup,
    cross_field_errors,
    renamed_errors,
    schema_errors,
)
from grpo_repro.evaluate.tasks import main_temperature


class ConfigError(ValueError):
    """An invalid configuration value; the message names the key (and file:line when known)."""


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


#: plain (unquoted) scalars that YAML 1.1 (PyYAML, which Snakemake reads configurations with) and
#: YAML 1.2 read differently: a boolean other than true/false (yes, on, n, ...), an integer that is
#: not plain decimal (octal 010, 0x10, 1_000, sexagesimal 1:30 = 90), a float with an underscore
#: or colons, and a number YAML 1.1 leaves a string (1e-5: no dot)
PLAIN_INT = re.compile(r"^[-+]?(0|[1-9][0-9]*)$")
BOOL_WORDS = {"true", "false"}
FLOAT_12 = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")


def yaml_ambiguities(path: str | Path) -> list[str]:
    """'file:line: ...' for each key a YAML mapping of the file repeats (the loader keeps the last
    one silently) and each plain scalar that YAML 1.1 and YAML 1.2 read differently (the value
    would depend on the loader): the configuration refuses both."""
    path = Path(path)
    try:
        root = yaml.compose(path.read_text())
    except (OSError, yaml.YAMLError):
        return []  # load_yaml names a syntax error
    found = []

    def where(node) -> str:
        return f"{path}:{node.start_mark.line + 1}"

    def walk(node):
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for key, value in node.value:
                if key.value in seen:
                    found.append(
                        f"{where(key)}: key '{key.value}' appears twice in one mapping (YAML "
                        "keeps the last silently): keep one"
                    )
                seen.add(key.value)
                walk(value)
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                walk(item)
        elif isinstance(node, yaml.ScalarNode) and node.style is None:
            text, tag = node.value, node.tag.rsplit(":", 1)[-1]
            if tag == "bool" and text.lower() not in BOOL_WORDS:
                found.append(
                    f"{where(node)}: {text!r} reads as a boolean in YAML 1.1 and as a string in "
                    "YAML 1.2: write true or false"
                )
            elif tag == "int" and not PLAIN_INT.match(text):
                found.append(
                    f"{where(node)}: {text!r} reads as {yaml.safe_load(text)!r} in YAML 1.1 "
                    "(octal, hex, underscores or base 60): write the decimal number"
                )
            elif tag == "float" and ("_" in text or ":" in text):
                found.append(
                    f"{where(node)}: {text!r} reads as {yaml.safe_load(text)!r} in YAML 1.1: "
                    "write the number without underscores or colons"
                )
            elif tag == "str" and FLOAT_12.match(text):
                hint = f"{float(text):.1e}".replace("e-0", "e-").replace("e+0", "e+")
                found.append(
                    f"{where(node)}: {text!r} is a string in YAML 1.1 and a number in YAML 1.2: "
                    f"write it with a dot and a signed exponent ({hint}) or quote it"
                )

    walk(root)
    return found


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


def described(errors: list, files: list, config: dict, what: str) -> str:
    """`what`, then a line per (key path, message[, related key paths]): the key, the file:line
    that set it, what is wrong."""
    lines = [
        f"  config key '{_dotted(e[0])}'{_where(e[0], files, config, *e[2:])}: {e[1]}"
        for e in errors
    ]
    return f"{what}:\n" + "\n".join(lines)


def check(config: dict, files: Iterable[str | Path] = ()) -> dict:
    """Validate `config`; raise ConfigError naming every bad key (with file:line when found), and
    every value of `files` that a YAML loader reads ambiguously (yaml_ambiguities)."""
    files = list(files)
    ambiguous = [a for f in files for a in yaml_ambiguities(f)]
    if ambiguous:
        raise ConfigError("ambiguous YAML in the configuration:\n  " + "\n  ".join(ambiguous))
    errors = renamed_errors(config) or schema_errors(config)
    if not errors:
        errors = cross_field_errors(config)
    if errors:
        raise ConfigError(described(errors, files, config, "invalid configuration"))
    return config


def located(
    keys: list, msg: str, files: Iterable[str | Path], config: dict, related=()
) -> ConfigError:
    """The ConfigError of one bad key, in check()'s format (key, file:line, what is wrong)."""
    return ConfigError(
        described([(keys, msg, related)], list(files), config, "invalid configuration")
    )


#: the Snakefile's `configfile:`: the base every configuration file overrides (config/paper.yaml
#: holds only what the paper changes in it, config/rehearsal.yaml only what the rehearsal changes in
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
    is load("config/paper.yaml"), the rehearsal's load("config/paper.yaml", "config/rehearsal.yaml")."""
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
    the resolved temperature, train.bf16 and train.use_vllm (eval.dtype: rollout's dtype,
    grpo_repro.models.rollout_dtype), and with eval.backend vllm the vllm section (its platform)."""
    settings = {
        "seed": config["seed"],
        "eval": without_speed_only(config)["eval"],
        "temperature": main_temperature(config),
        "bf16": config["train"]["bf16"],
        "use_vllm": config["train"]["use_vllm"],
    }
    if config["eval"]["backend"] == "vllm":  # the other backends' settings never change
        settings["vllm"] = dict(config["vllm"])
    return settings


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
