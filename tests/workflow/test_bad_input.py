"""Bad input matrix (every config key, data files, model paths, checkpoints): each fails with an
error that names the culprit, before any expensive work starts."""

import copy
import subprocess
import sys

import pytest

from grpo_repro import config as cfg
from grpo_repro.data.sets import check_sources
from grpo_repro.models import ModelError, check_model_source, load_policy
from tests.helpers import ROOT

DEFAULT = cfg.load_yaml(ROOT / "config" / "config.yaml")
SCHEMA = cfg.load_schema()


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
