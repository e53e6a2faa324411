"""Loading policies (pi_ref, checkpoints) for training and evaluation, offline-first.

An organism model directory carries `organism.json`; its word-level tokenizer is loaded as
PreTrainedTokenizerFast (AutoTokenizer would silently build a byte-level Qwen2 tokenizer).
Hub ids are used only when the hub is reachable; trust_remote_code stays off.
"""

from __future__ import annotations

import os
from pathlib import Path

ORGANISM_MARKER = "organism.json"


class ModelError(ValueError):
    """A model path or id that cannot be loaded; the message says how to provide it."""


def is_local(name_or_path: str) -> bool:
    return os.path.isabs(name_or_path) or name_or_path.startswith((".", "~")) or Path(name_or_path).exists()


def check_model_source(name_or_path: str) -> None:
    """Fail fast (before expensive work) on a missing local path, or a hub id while offline."""
    if is_local(name_or_path):
        path = Path(name_or_path).expanduser()
        if not (path / "config.json").exists():
            raise ModelError(f"model path {path} does not exist or has no config.json "
                             "(config key model.name_or_path)")
        return
    if os.environ.get("HF_HUB_OFFLINE") == "1":
        from huggingface_hub import try_to_load_from_cache

        if try_to_load_from_cache(name_or_path, "config.json") is None:
            raise ModelError(
                f"model '{name_or_path}' is a hub id but HF_HUB_OFFLINE=1 and it is not in the local "
                "cache: download it on a connected machine (`huggingface-cli download "
                f"{name_or_path} --local-dir models/...`) and set model.name_or_path to that directory")


def load_tokenizer(name_or_path: str | Path):
    path = Path(name_or_path)
    if (path / ORGANISM_MARKER).exists():
        from grpo_repro.organism.tokenizer import load_tokenizer as load_word_level

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
            str(name_or_path), dtype=getattr(torch, dtype), trust_remote_code=False).to(device)
        tokenizer = load_tokenizer(name_or_path)
    except Exception as err:  # noqa: BLE001 (safetensors raises its own error type)
        if not Path(name_or_path).exists():
            raise
        raise ModelError(f"model directory {name_or_path} is corrupt or incomplete ({type(err).__name__}: "
                         f"{err}); delete it and rerun the job that wrote it") from err
    model.eval()
    return model, tokenizer
