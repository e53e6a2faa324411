"""Loading policies (pi_ref, checkpoints) for training and evaluation, offline-first.

An organism model directory carries `organism.json`; its word-level tokenizer is loaded as
PreTrainedTokenizerFast (AutoTokenizer would silently build a byte-level Qwen2 tokenizer).
Hub ids are used only when the hub is reachable; trust_remote_code stays off.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

ORGANISM_MARKER = "organism.json"
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
SKIP_WEIGHTS = {"training_args.bin", "optimizer.pt", "scheduler.pt", "rng_state.pth", "scaler.pt"}


class ModelError(ValueError):
    """A model path or id that cannot be loaded; the message says how to provide it."""


def is_local(name_or_path: str) -> bool:
    return (
        os.path.isabs(name_or_path)
        or name_or_path.startswith((".", "~"))
        or Path(name_or_path).exists()
    )


def check_model_source(name_or_path: str) -> None:
    """Fail fast (before expensive work) on a missing local path, or a hub id while offline."""
    if is_local(name_or_path):
        path = Path(name_or_path).expanduser()
        if not (path / "config.json").exists():
            raise ModelError(
                f"model path {path} does not exist or has no config.json "
                "(config key model.name_or_path)"
            )
        return
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        from huggingface_hub import try_to_load_from_cache

        if try_to_load_from_cache(name_or_path, "config.json") is None:
            raise ModelError(
                f"model '{name_or_path}' is a hub id but HF_HUB_OFFLINE=1 and it is not in the local "
                "cache: download it on a connected machine (`huggingface-cli download "
                f"{name_or_path} --local-dir models/...`) and set model.name_or_path to that directory"
            )


def load_tokenizer(name_or_path: str | Path):
    path = Path(name_or_path)
    if (path / ORGANISM_MARKER).exists():
        from grpo_repro.data.tokenizer import load_tokenizer as load_word_level

        return load_word_level(path)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(name_or_path), trust_remote_code=False)
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def load_policy(name_or_path: str | Path, dtype: str = "float32", device: str = "cpu"):
    """(model in eval mode, tokenizer) for a local directory or a hub id."""
    import torch
    from transformers import AutoModelForCausalLM

    check_model_source(str(name_or_path))
    try:
        model = AutoModelForCausalLM.from_pretrained(
            str(name_or_path), dtype=getattr(torch, dtype), trust_remote_code=False
        ).to(device)
        tokenizer = load_tokenizer(name_or_path)
    except Exception as err:
        if not Path(name_or_path).exists():
            raise
        raise ModelError(
            f"model directory {name_or_path} is corrupt or incomplete ({type(err).__name__}: "
            f"{err}); delete it and rerun the job that wrote it"
        ) from err
    model.eval()
    return model, tokenizer


def model_hash(model_dir: str | Path) -> str:
    """sha256 over the weight files of a saved model directory (names and contents, sorted)."""
    root = Path(model_dir)
    files = sorted(
        p
        for p in root.iterdir()
        if p.is_file() and p.suffix in WEIGHT_SUFFIXES and p.name not in SKIP_WEIGHTS
    )
    if not files:
        raise FileNotFoundError(f"no weight files (*.safetensors, *.bin) in {root}")
    h = hashlib.sha256()
    for p in files:
        h.update(p.name.encode() + b"\0")
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def save_policy(model, tokenizer, dest: Path, marker: dict | None = None) -> None:
    """Save model + tokenizer to dest atomically (temp dir, then rename)."""
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    if marker is not None:
        (tmp / "organism.json").write_text(json.dumps(marker))
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)
