"""The configuration's value checks (grpo_repro.config.check reports them with file and line):
the JSON schema (schemas/config.schema.yaml: types, ranges, allowed names), keys renamed since,
and the cross-field rules a schema cannot state (the fixed-point steps, the eval splits, the data
source's files, the organism's problem space and model shape, and the batch arithmetic of both
layouts).
Each check returns (key path, message[, related key paths]); nothing here reads a file's lines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from grpo_repro import variants as reg

SCHEMA_PATH = Path(str(resources.files("grpo_repro") / "schemas" / "config.schema.yaml"))


def load_schema() -> dict:
    """The configuration's JSON schema (schemas/config.schema.yaml; no defaults: config/config.yaml
    holds every value), with the variant names of the registry's records (grpo_repro.variants, read
    now: a new record is accepted without an edit here or in the schema)."""
    schema = yaml.safe_load(SCHEMA_PATH.read_text())
    trained = reg.names(trained=True)
    defs = schema["$defs"]
    defs["variant"]["enum"] = list(trained)
    defs["one_anchor"]["enum"] = [n for n in trained if not reg.get(n).two_kl]
    estimators = schema["properties"]["train"]["properties"]["kl_estimator"]["enum"]
    defs["fp_kind"]["pattern"] = "^({})/({})$".format(
        "|".join(map(re.escape, trained)), "|".join(map(re.escape, estimators))
    )
    return schema


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
    from grpo_repro.data.sources import SOURCES  # the data registry, read at load time only

    src = SOURCES.get(data.get("source"))
    found += data_errors(data, src) + organism_errors(config, src)
    if not src.word_level and word_level:
        found.append(
            (
                ["model", "name_or_path"],
                f"data.source={src.name} needs a model that reads English: a hub id or local "
                "path, or null with organism.tokenizer: bpe (a byte-level BPE the pipeline trains "
                f"on the {src.title} training text); the organism's word-level "
                f"vocabulary cannot read {src.title}",
                [["data", "source"], ["organism", "tokenizer"]],
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
    ev = config.get("eval", {})
    found += [
        (
            ["eval", key],
            "holds val but data.n_val is 0 (no validation split): set data.n_val > 0 or "
            f"drop val from eval.{key}",
            [["data", "n_val"]],
        )
        for key in ("splits", "temperature_splits")
        if "val" in (ev.get(key) or []) and not data.get("n_val")
    ]
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
    if train.get("lm_head_fp32") and not train.get("bf16"):
        found.append(
            (
                ["train", "lm_head_fp32"],
                "casts the LM head of bf16 training to float32, and train.bf16 is false: the "
                "head is float32 already; set train.lm_head_fp32: false, or train.bf16: true",
                [["train", "bf16"]],
            )
        )
    found += layout_errors(config)
    fp = config.get("fixed_point", {})
    mu = {"train.num_iterations": train.get("num_iterations", 1)}
    for name, change in fp.get("factors", {}).items():
        if "num_iterations" in change:
            mu[f"fixed_point.factors.{name}"] = change["num_iterations"]
    found += plateau_errors(["fixed_point"], fp, mu)
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
    if config.get("zero") and "test" not in ev.get("splits", []):  # grpo_repro.zero screens it
        found.append((["zero"], "screens pi_ref's test table: eval.splits must hold test"))
    return found


def plateau_errors(where: list, section: dict, mu: dict) -> list:
    """The checkpoints of a fixed-point run kind (section at key path `where`): each at a fresh
    generation batch (save_steps a multiple of every mu of `mu`, {its key: value}), and a plateau
    read from the last two of them (save_steps at most half of max_steps)."""
    save, found = section.get("save_steps", 1), []
    found += [
        ([*where, "save_steps"], f"must be a multiple of {key} ({m}): checkpoints at fresh batches")
        for key, m in mu.items()
        if save % m
    ]
    if 2 * save > section.get("max_steps", 2):
        found.append(
            (
                [*where, "save_steps"],
                f"at most half of {_dotted([*where, 'max_steps'])}: the plateau is read from the "
                "last two checkpoints",
            )
        )
    return found


def compact_errors(c: dict | None, mu: int) -> list:
    """fixed_point.compact: checkpoints at fresh generation batches, a plateau of two checkpoints,
    and a run kind with an interior fixed point (anchored on pi_ref: Thm 2-3; mirror has none)."""
    if not c:
        return []
    where = ["fixed_point", "compact"]
    found = plateau_errors(where, c, {"train.num_iterations": mu})
    variant = c["run"].split("/")[0]
    if reg.plateau_base(variant) is None:
        found.append(([*where, "run"], f"{variant} has no interior fixed point (Thm 5)"))
    return found


def data_errors(data: dict, src) -> list[tuple]:
    """Keys the data source `src` (grpo_repro.data.sources.SOURCES[data.source]) cannot honour:
    a local path set for a source that reads no such file (the organism generates its problems),
    which would be ignored (an overlay applied without its base does this: an overlay of
    config/paper.yaml giving local GSM8K files, over config/config.yaml's organism); data.n_train or
    data.n_test null on a source that generates its problems: null means "the whole split" of a
    file source (GSM8K), but a generated source has no whole split to take, and would silently
    produce none (an empty headline split)."""
    found = [
        (
            ["data", key],
            f"is set, but data.source {src.name} reads no local file (its keys: "
            f"{', '.join(f'data.{k}' for k in src.path_keys.values()) or 'none'}): set "
            "data.source to a source that reads it (gsm8k), or this key to null (an overlay of "
            "config/paper.yaml applies on top of it: --configfile config/paper.yaml mine.yaml)",
            [["data", "source"]],
        )
        for key in ("train_path", "test_path")
        if data.get(key) is not None and key not in src.path_keys.values()
    ]
    return found + [
        (
            ["data", key],
            f"is null, but data.source {src.name} generates its problems: null means the whole "
            "split of a file source only; give the number of problems to generate",
            [["data", "source"]],
        )
        for key in ("n_train", "n_test")
        if src.generate is not None and key in data and data[key] is None
    ]


def layout_errors(config: dict) -> list[tuple]:
    """The batch layout of GRPO training (grpo_repro.train.args.per_device_batch), in both
    train.vllm_mode layouts: the prompts_per_step x G completions of an optimizer step split into
    whole groups of G per training process and micro-step over train.devices processes x
    train.grad_accum micro-steps, i.e. prompts_per_step is a multiple of devices x grad_accum
    (the paper: 28 prompts = 7 devices x 4 micro-steps, 16 completions per device). The vLLM
    server of vllm_mode server runs on an extra GPU and is not a training process, and needs
    train.use_vllm and CUDA: vLLM's CPU backend (vllm.platform: cpu) generates in colocate mode
    only, since server mode's weight sync (TRL's VLLMClient.init_communicator, vLLM's
    weight-transfer backends) needs CUDA devices."""
    found, train = [], config.get("train", {})
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
    on_cpu = config.get("vllm", {}).get("platform") == "cpu"
    if on_cpu and server:
        found.append(
            (
                ["train", "vllm_mode"],
                "server needs GPUs, and vllm.platform is cpu: the trainer sends the weights to the "
                "server over NCCL (TRL's VLLMClient.init_communicator, CUDA only); set "
                "train.vllm_mode: colocate (a vLLM engine inside the training process) on a CPU, "
                "or vllm.platform: cuda on a GPU node",
                [["vllm", "platform"], ["train", "use_vllm"]],
            )
        )
    return found


ORGANISM_SIZES = (("data", "n_train"), ("data", "n_val"), ("data", "n_test"), ("organism", "n_sft"))


def organism_errors(config: dict, src) -> list[tuple]:
    """What the organism's jobs would refuse, known at load: more distinct problems asked of the
    generator (data.n_train + n_val + n_test + organism.n_sft, data_prepare) than its problem
    space holds (grpo_repro.data.organism.problem_space: min_steps, max_steps, max_operand,
    max_value, dedup), and a model shape transformers refuses (train_reference: the hidden size a
    multiple of the heads, an even head size for the rotary embedding). A run whose data_prepare
    then failed would lose the finished results/data/ tree (Snakemake removes a job's outputs
    before it runs)."""
    from grpo_repro.data.organism import SPACE_SHARE, TaskSpec, problem_space

    org, found = config.get("organism", {}), []
    hidden, heads = org.get("hidden", 2), org.get("heads", 1)
    if hidden % heads or (hidden // heads) % 2:
        found.append(
            (
                ["organism", "hidden"],
                f"{hidden} over organism.heads = {heads} heads must give a whole, even head size "
                "(transformers' attention and rotary embedding refuse it)",
                [["organism", "heads"]],
            )
        )
    if src.generate is None or org.get("min_steps", 1) > org.get("max_steps", 1):
        return found
    knobs = ("min_steps", "max_steps", "max_operand", "max_value")
    spec = TaskSpec(*(org[k] for k in knobs))
    space = problem_space(spec, org.get("dedup", "question"))
    asked = sum(int(config.get(sec, {}).get(key) or 0) for sec, key in ORGANISM_SIZES)
    if asked > SPACE_SHARE * space:
        found.append(
            (
                ["organism", "max_steps"],
                f"the generator has {space} distinct problems at organism.min_steps "
                f"{spec.min_steps}, max_steps {spec.max_steps}, max_operand {spec.max_operand}, "
                f"max_value {spec.max_value} (dedup {org.get('dedup', 'question')}), and "
                f"data.n_train + n_val + n_test + organism.n_sft ask for {asked}, more than "
                f"{SPACE_SHARE:.0%} of them: allow more steps or larger numbers, or ask for fewer",
                [["organism", k] for k in (*knobs, "dedup", "n_sft")]
                + [list(k) for k in ORGANISM_SIZES[:3]],
            )
        )
    return found
