"""The dress rehearsal (grpo_repro.rehearsal): its overlay differs from config/paper.yaml only in
size and in what a CPU forces; its hub cache is its own and serves every hub path offline, as the
prefetched cache serves a cluster's compute nodes."""

import hashlib

import pytest

from grpo_repro import config as cfg
from grpo_repro import hub, rehearsal
from grpo_repro.rehearsal import CPU_KEYS, NO_VLLM_KEYS, SIZE_KEYS, RehearsalError, foreign_keys
from tests.helpers import ROOT

QWEN = "Qwen/Qwen2.5-0.5B-Instruct"


@pytest.mark.parametrize(
    "overlay, allowed",
    [("rehearsal.yaml", SIZE_KEYS + CPU_KEYS), ("rehearsal_hf.yaml", NO_VLLM_KEYS)],
)
def test_the_overlays_change_only_sizes_and_what_the_machine_forces(overlay, allowed):
    keys = rehearsal.overlay_keys(cfg.load_yaml(ROOT / "config" / overlay))
    assert keys and foreign_keys(cfg.load_yaml(ROOT / "config" / overlay), allowed) == []


@pytest.mark.parametrize(
    "extra, culprit",
    [
        ({"train": {"learning_rate": 1.0e-4}}, "train.learning_rate"),  # a result-relevant key
        ({"model": {"name_or_path": None}}, "model.name_or_path"),  # the hub model replaced
        ({"data": {"train_path": "x.jsonl"}}, "data.train_path"),  # the hub data replaced
        ({"fixed_point": {"compact": None}}, "fixed_point.compact"),  # a study dropped
        ({"train": {"max_steps": 5}}, None),  # a size: allowed
    ],
)
def test_the_overlay_check_fails_on_a_non_size_key(extra, culprit):
    overlay = cfg.merge(cfg.load_yaml(ROOT / "config" / "rehearsal.yaml"), extra)
    assert foreign_keys(overlay, SIZE_KEYS + CPU_KEYS) == ([culprit] if culprit else [])


def _tree_digest(root):
    digest = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        digest.update(str(p.relative_to(root)).encode())
        if p.is_file():
            digest.update(p.read_bytes())
    return digest.hexdigest()


def test_the_cache_is_the_rehearsals_own_never_a_real_one(tmp_path, monkeypatch):
    """A random model stored under a real model's id must not reach a real cache: the user's
    cache (HF_HOME) is refused, so is any folder that is not the rehearsal's, and building the
    rehearsal's leaves the user's cache byte for byte as it was."""
    user = tmp_path / "user_hf"
    real = user / "hub" / "models--Qwen--Qwen2.5-0.5B-Instruct" / "snapshots" / "abc"
    real.mkdir(parents=True)
    (real / "config.json").write_text('{"real": true}')
    monkeypatch.setenv("HF_HOME", str(user))
    before = _tree_digest(user)
    config = rehearsal_config()
    with pytest.raises(RehearsalError, match="this environment's Hugging Face cache"):
        rehearsal.build_cache(config, user)
    other = tmp_path / "someone_elses"
    other.mkdir()
    (other / "file").write_text("x")
    with pytest.raises(RehearsalError, match="not a rehearsal cache"):
        rehearsal.build_cache(config, other)
    own = tmp_path / "own"
    written = rehearsal.build_cache(config, own)
    assert written["model"]["folder"].startswith(str(own))
    assert _tree_digest(user) == before  # the user's cache untouched
    rehearsal.build_cache(config, own)  # its own folder: rebuilt in place


def rehearsal_config():
    return cfg.load(*(ROOT / "config" / f for f in ("paper.yaml", "rehearsal.yaml")))


def test_every_hub_path_reads_the_stand_in_offline(offline_hub):
    """The paper's model spec resolves to the cached snapshot at its pinned revision; the weights'
    hash, the tokenizer with Qwen2.5's chat template, the model and GSM8K all load offline."""
    from grpo_repro.models import load_policy, model_hash

    config = rehearsal_config()
    spec = hub.spec(config["model"])
    assert spec == f"{QWEN}@{config['model']['revision']}"
    folder = hub.local_dir(spec)
    assert folder.name == config["model"]["revision"] and folder.is_relative_to(offline_hub)
    assert len(model_hash(spec)) == 64 and model_hash(spec) == model_hash(folder)
    model, tok = load_policy(spec)
    assert model.name_or_path == str(folder)  # what TRL reloads its reference model from
    chat = [{"role": "user", "content": "Q?"}]
    assert tok.apply_chat_template(chat, tokenize=False).startswith("<|im_start|>system")
    assert model.generation_config.top_k == 20  # Qwen2.5's defaults, which the run must override
    split = hub.dataset_split("openai/gsm8k", "main", config["data"]["hub_revision"], "train")
    assert len(split) == 64


def test_the_hub_is_read_through_the_libraries_public_calls(offline_hub, monkeypatch):
    """A model's snapshot comes from huggingface_hub's snapshot_download (local files only), a
    dataset's split from `datasets`' load_from_disk of the folder the prefetch saved: no folder
    layout of either library is decoded by hand."""
    import datasets
    import huggingface_hub

    calls = []
    for mod, name in ((huggingface_hub, "snapshot_download"), (datasets, "load_from_disk")):
        real = getattr(mod, name)

        def spy(*a, _real=real, _name=name, **k):
            calls.append((_name, k.get("local_files_only")))
            return _real(*a, **k)

        monkeypatch.setattr(mod, name, spy)
    config = rehearsal_config()
    hub.local_dir(hub.spec(config["model"]))
    assert len(hub.dataset_split("openai/gsm8k", "main", config["data"]["hub_revision"], "test"))
    assert ("snapshot_download", True) in calls and ("load_from_disk", None) in calls


def test_a_model_missing_from_the_cache_names_the_prefetch(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    with pytest.raises(hub.HubError, match="python -m grpo_repro.prefetch"):
        hub.local_dir(f"{QWEN}@{'0' * 40}")


def test_the_prefetch_fetches_nothing_the_cache_holds(offline_hub, monkeypatch, capsys):
    """With the cache complete the prefetch needs no hub (and says so); with it empty and the hub
    out of reach it fails in one line, naming where to run it."""
    from grpo_repro import prefetch

    monkeypatch.delenv("HF_HUB_OFFLINE")
    assert prefetch.main(["--configfile", str(ROOT / "config" / "paper.yaml")]) == 0
    assert "holds everything the run reads" in capsys.readouterr().out

    def unreachable(*a, **k):
        raise ConnectionError("Failed to resolve 'huggingface.co'")

    monkeypatch.setattr("huggingface_hub.snapshot_download", unreachable)
    monkeypatch.setenv("HF_HOME", str(offline_hub.parent / "empty"))
    assert prefetch.main(["--configfile", str(ROOT / "config" / "paper.yaml")]) == 1
    err = capsys.readouterr().err
    assert "ConnectionError" in err and "reaches the hub" in err
