"""Bad input matrix (every config key, data files, model paths, checkpoints): each fails with an
error that names the culprit, before any expensive work starts."""

import copy
import re
import subprocess
import sys

import pytest
import yaml

from grpo_repro import config as cfg
from grpo_repro.config_checks import load_schema
from grpo_repro.data.sets import check_sources
from grpo_repro.models import ModelError, check_model_source, load_policy
from tests.helpers import ROOT

DEFAULT = cfg.load_yaml(ROOT / "config" / "config.yaml")
SCHEMA = load_schema()


def _resolve(sub):
    """`sub` with its $ref (a JSON pointer into the schema: #/$defs/.. or #/properties/..) followed."""
    while "$ref" in sub:
        node = SCHEMA
        for part in sub["$ref"].removeprefix("#/").split("/"):
            node = node[part]
        sub = node
    return sub


def leaves(node, schema, keys=()):
    """(key path, leaf schema) for every scalar/list key of the default configuration (a key
    under a mapping of named entries, e.g. fixed_point.factors: its additionalProperties)."""
    for k, v in node.items():
        sub = _resolve(schema.get("properties", {}).get(k) or schema["additionalProperties"])
        if isinstance(v, dict):
            yield from leaves(v, sub, keys + (k,))
        else:
            yield keys + (k,), sub


LEAVES = list(leaves(DEFAULT, SCHEMA))


def _set(config, keys, value):
    node = config
    for k in keys[:-1]:
        node = node[k]
    node[keys[-1]] = value


def _dotted(keys):
    return ".".join(keys)


@pytest.mark.parametrize("keys", [k for k, _ in LEAVES], ids=_dotted)
def test_every_key_rejects_wrong_type(keys):
    config = copy.deepcopy(DEFAULT)
    _set(config, keys, {"not": "a valid value"})
    with pytest.raises(cfg.ConfigError, match=rf"'{_dotted(keys)}'"):
        cfg.check(config)


def _below_minimum(sub):
    sub = _resolve(sub)
    if "oneOf" in sub:
        subs = [_resolve(s) for s in sub["oneOf"]]
        sub = next((s for s in subs if "minimum" in s or "exclusiveMinimum" in s), sub)
    if "minimum" in sub:
        return sub["minimum"] - 1
    if "exclusiveMinimum" in sub:
        return sub["exclusiveMinimum"]
    return None


RANGED = [(k, _below_minimum(s)) for k, s in LEAVES if _below_minimum(s) is not None]


@pytest.mark.parametrize("keys,value", RANGED, ids=[_dotted(k) for k, _ in RANGED])
def test_every_ranged_key_rejects_out_of_range(keys, value):
    config = copy.deepcopy(DEFAULT)
    _set(config, keys, value)
    with pytest.raises(cfg.ConfigError, match=rf"'{_dotted(keys)}'"):
        cfg.check(config)


def test_matrix_covers_the_numeric_keys():
    assert len(RANGED) >= 25 and len(LEAVES) >= 50


def test_missing_data_file_named(tmp_path):
    config = copy.deepcopy(DEFAULT)
    config["data"].update(source="gsm8k", train_path=str(tmp_path / "nope.jsonl"))
    config["model"]["name_or_path"] = str(tmp_path)
    with pytest.raises(ValueError, match=r"data.train_path.*nope.jsonl does not exist"):
        check_sources(config)
    (tmp_path / "empty.jsonl").write_text("")
    config["data"]["train_path"] = str(tmp_path / "empty.jsonl")
    with pytest.raises(ValueError, match=r"data.train_path.*is empty"):
        check_sources(config)


def test_missing_model_path_named(tmp_path):
    with pytest.raises(ModelError, match=r"does not exist.*model.name_or_path"):
        check_model_source(str(tmp_path / "no_model"))


def test_corrupt_checkpoint_named(tiny_policy, tmp_path):
    import shutil

    ref, _ = tiny_policy
    bad = tmp_path / "step_8"
    shutil.copytree(ref, bad)
    (bad / "model.safetensors").write_bytes(b"\x00garbage")
    with pytest.raises(Exception) as err:
        load_policy(bad)
    assert "step_8" in str(err.value) or "safetensors" in str(err.value).lower()


def test_workflow_stops_on_missing_model_path(tmp_path):
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "snakemake",
            "-n",
            "--config",
            f"model={{name_or_path: {tmp_path}/absent}}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert res.returncode != 0 and "absent does not exist" in res.stdout + res.stderr


def _numeric(sub) -> set:
    """The JSON types a leaf's schema admits ({'number', 'integer'} and the like)."""
    sub = _resolve(sub)
    types = set()
    for s in [sub, *(_resolve(x) for x in sub.get("oneOf", []))]:
        t = s.get("type", [])
        types |= set(t if isinstance(t, list) else [t])
        if "items" in s:
            types |= {f"items:{x}" for x in _numeric(s["items"])}
    return types


NUMERIC = [k for k, s in LEAVES if _numeric(s) & {"number", "integer", "items:number"}]
INTEGER = [k for k, s in LEAVES if _numeric(s) & {"integer", "items:integer"}]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")], ids=str)
@pytest.mark.parametrize("keys", NUMERIC, ids=_dotted)
def test_every_numeric_key_refuses_a_non_finite_number(keys, value):
    """One rule over every number (JSON Schema's comparisons are false for NaN, and an exclusive
    minimum admits infinity): refused naming the key, a list's element included."""
    config = copy.deepcopy(DEFAULT)
    old = config
    for k in keys[:-1]:
        old = old[k]
    _set(config, keys, [value] if isinstance(old[keys[-1]], list) else value)
    with pytest.raises(cfg.ConfigError, match=rf"'{_dotted(keys)}(\[0\])?'.*not a finite number"):
        cfg.check(config)


@pytest.mark.parametrize("keys", INTEGER, ids=_dotted)
def test_every_integer_key_refuses_what_no_library_takes(keys):
    config = copy.deepcopy(DEFAULT)
    old = config
    for k in keys[:-1]:
        old = old[k]
    big = 2**40
    _set(config, keys, [big] if isinstance(old[keys[-1]], list) else big)
    with pytest.raises(cfg.ConfigError, match=rf"'{_dotted(keys)}(\[0\])?'.*beyond 2147483647"):
        cfg.check(config)


def test_the_number_matrix_covers_the_numeric_keys():
    assert len(NUMERIC) >= 60 and len(INTEGER) >= 35


@pytest.mark.parametrize(
    "text, said",
    [
        ("train:\n  bf16: on\n", "'on' reads as a boolean in YAML 1.1"),
        ("train:\n  use_vllm: no\n", "'no' reads as a boolean in YAML 1.1"),
        ("train:\n  save_steps: 040\n", "'040' reads as 32 in YAML 1.1"),
        ("train:\n  max_steps: 1_000\n", "'1_000' reads as 1000 in YAML 1.1"),
        ("eval:\n  samples: 1:30\n", "'1:30' reads as 90 in YAML 1.1"),
        ("train:\n  beta: 1e-1\n", "'1e-1' is a string in YAML 1.1 and a number in YAML 1.2"),
        ("train:\n  beta: 0.1\n  beta: 0.2\n", "key 'beta' appears twice"),
    ],
)
def test_yaml_a_loader_reads_ambiguously_is_refused_with_file_and_line(tmp_path, text, said):
    mine = tmp_path / "mine.yaml"
    mine.write_text(text)
    config = cfg.merge(copy.deepcopy(DEFAULT), cfg.load_yaml(mine))
    line = len(text.splitlines())
    with pytest.raises(cfg.ConfigError, match=rf"mine.yaml:{line}: {re.escape(said)}"):
        cfg.check(config, [ROOT / "config" / "config.yaml", mine])


@pytest.mark.parametrize(
    "organism, key, said",
    [
        ({"max_steps": 1}, "organism.max_steps", "9920 distinct problems"),
        ({"max_operand": 2, "max_value": 10}, "organism.max_steps", "distinct problems"),
        ({"dedup": "question_and_solution", "max_steps": 2}, "organism.max_steps", "2263"),
        ({"hidden": 130}, "organism.hidden", "whole, even head size"),
        ({"hidden": 132}, "organism.hidden", "whole, even head size"),  # head size 33: odd
    ],
)
def test_what_a_job_would_refuse_is_refused_at_load(tmp_path, organism, key, said):
    """The organism's problem space (data_prepare) and model shape (train_reference), known when
    the workflow loads: refused there, naming the key, file and line."""
    mine = tmp_path / "mine.yaml"
    mine.write_text(yaml.safe_dump({"organism": organism}))
    with pytest.raises(cfg.ConfigError) as err:
        cfg.load(mine)
    assert f"config key '{key}' ({mine}:" in str(err.value) and said in str(err.value)


#: put on PYTHONPATH of a dry run: counts each validation of a whole configuration against the
#: schema (any jsonschema validator's iter_errors over a mapping with the sections train and eval)
COUNT_SCHEMA_PASSES = """
import atexit, jsonschema.validators as v
passes = []
def counted(cls):
    orig = cls.iter_errors
    def iter_errors(self, instance, *a, **k):
        if isinstance(instance, dict) and {"train", "eval"} <= set(instance):
            passes.append(1)
        return orig(self, instance, *a, **k)
    cls.iter_errors = iter_errors
    return cls
counted(v.Draft202012Validator)
create = v.create
v.create = lambda *a, **k: counted(create(*a, **k))  # classes made later (validators.extend)
atexit.register(lambda: print(f"SCHEMA_PASSES={len(passes)}"))
"""


def test_the_configuration_meets_the_schema_once_per_load(tmp_path):
    """The workflow validates the configuration against the schema in one pass (grpo_repro.config.
    check, whose messages name key, file and line), not a second time through another validator."""
    import os

    from tests.helpers import snakemake

    (tmp_path / "sitecustomize.py").write_text(COUNT_SCHEMA_PASSES)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}:{os.environ.get('PYTHONPATH', '')}"}
    res = snakemake(["-n", "-d", str(tmp_path / "run")], ROOT, env=env, timeout=300)
    assert res.returncode == 0, res.log[-2000:]
    assert "SCHEMA_PASSES=1" in res.stdout, res.log[-2000:]
