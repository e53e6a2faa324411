"""Loading policies (pi_ref, checkpoints) for training and evaluation, offline-first.

Saved directories (pi_ref, every GRPO checkpoint: `save_policy`) load with plain transformers:
AutoModelForCausalLM, and the tokenizer class their tokenizer_config.json declares
(`tokenizer_class`, `padding_side: left` as the pipeline pads), which AutoTokenizer builds:
- byte-level BPE organism (the rehearsal's stand-in) and hub Qwen2 models: Qwen2Tokenizer;
- word-level organism (Llama, organism.arch llama): PreTrainedTokenizerFast. Beside a Qwen2
  (organism.arch qwen2) AutoTokenizer cannot load it: for model_type qwen2 transformers 5.x always
  builds Qwen2Tokenizer (qwen2 is in its MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS, whatever
  tokenizer_class says), a byte-level BPE that tokenizes this vocabulary wrongly without an error.
  `load_tokenizer` reads the declared class, for both.
tests/unit/test_checkpoint_loading.py loads every kind the standard way. A hub model is read from
its snapshot in the local cache (grpo_repro.hub); trust_remote_code stays off.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from grpo_repro.hub import is_local, local_dir

ORGANISM_MARKER = "organism.json"
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
GENERIC_TOKENIZER = "PreTrainedTokenizerFast"
#: Qwen2 / Qwen2.5 pre-tokenisation regex (tokenizer.json of Qwen/Qwen2.5-0.5B-Instruct): a
#: byte-level BPE split by it is Qwen2Tokenizer's (grpo_repro.data.prepare builds the organism's)
QWEN2_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
SKIP_WEIGHTS = {"training_args.bin", "optimizer.pt", "scheduler.pt", "rng_state.pth", "scaler.pt"}


class ModelError(ValueError):
    """A model path or id that cannot be loaded; the message says how to provide it."""


def check_model_source(name_or_path: str) -> None:
    """Fail fast (before expensive work) on a missing local model directory; a hub spec's cache is
    checked by grpo_repro.hub (`local_dir`, and the run's start check)."""
    if is_local(name_or_path):
        path = Path(name_or_path).expanduser()
        if not (path / "config.json").exists():
            raise ModelError(
                f"model path {path} does not exist or has no config.json "
                "(config key model.name_or_path)"
            )


def declared_tokenizer_class(path: str | Path) -> str | None:
    """tokenizer_class of a local directory's tokenizer_config.json (None: none or not local)."""
    cfg = Path(path) / "tokenizer_config.json"
    return json.loads(cfg.read_text()).get("tokenizer_class") if cfg.is_file() else None


def load_tokenizer(name_or_path: str | Path):
    """The tokenizer of a local model directory or a hub spec (grpo_repro.hub: its cached
    snapshot), left-padded."""
    path = local_dir(name_or_path)
    if (path / ORGANISM_MARKER).exists() or declared_tokenizer_class(path) == GENERIC_TOKENIZER:
        from transformers import PreTrainedTokenizerFast

        tok = PreTrainedTokenizerFast.from_pretrained(str(path))  # the file as saved
        tok.padding_side = "left"
        return tok
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(path), trust_remote_code=False)
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def load_policy(name_or_path: str | Path, dtype: str = "float32", device: str = "cpu"):
    """(model in eval mode, tokenizer) for a local directory or a hub spec "id@revision", loaded from
    its folder (grpo_repro.hub.local_dir: the cached snapshot), so that the model's own path, which
    TRL reloads its reference model from, is that folder."""
    import torch
    from transformers import AutoModelForCausalLM

    path = local_dir(name_or_path)
    check_model_source(str(path))
    try:
        model = AutoModelForCausalLM.from_pretrained(
            str(path), dtype=getattr(torch, dtype), trust_remote_code=False
        ).to(device)
        tokenizer = load_tokenizer(path)
    except Exception as err:
        raise ModelError(
            f"model directory {path} is corrupt or incomplete ({type(err).__name__}: "
            f"{err}); delete it and rerun the job (or the prefetch) that wrote it"
        ) from err
    model.eval()
    return model, tokenizer


def rollout_dtype(train: dict) -> str:
    """The dtype training's rollouts are sampled with (config section `train`): with use_vllm
    false TRL generates with the float32 master weights, no autocast ("float32"); with use_vllm
    true the training job's vLLM server is started with this dtype ("bfloat16" if train.bf16;
    grpo_repro.train.vllm_server), and TRL's colocated engine (train.vllm_mode colocate) too
    (grpo_repro.train.vllm_colocate; TRL alone would leave it at vLLM's "auto"). Evaluation's
    eval.dtype: rollout samples with it (grpo_repro.evaluate.job.eval_dtype)."""
    if train.get("use_vllm"):
        return "bfloat16" if train.get("bf16") else "float32"
    return "float32"


def model_hash(model_dir: str | Path) -> str:
    """sha256 over the weight files of a saved model directory or a hub spec's cached snapshot
    (names and contents, sorted)."""
    root = local_dir(model_dir)
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
    standardize_tokenizer_config(tmp, tokenizer)
    if marker is not None:
        (tmp / "organism.json").write_text(json.dumps(marker))
    shutil.rmtree(dest, ignore_errors=True)
    os.replace(tmp, dest)


def standardize_tokenizer_config(model_dir: Path, tokenizer) -> None:
    """Declare, in model_dir/tokenizer_config.json, the class that reproduces `tokenizer` from its
    tokenizer.json (Qwen2Tokenizer for a byte-level BPE with Qwen2's pre-tokenizer, the organism's
    BPE; PreTrainedTokenizerFast for anything else, the word-level organism) and the pipeline's
    left padding, so that outside tools need no project code (module docstring)."""
    path = Path(model_dir) / "tokenizer_config.json"
    cfg = json.loads(path.read_text())
    backend = json.loads(tokenizer.backend_tokenizer.to_str())
    pre = backend.get("pre_tokenizer") or {}
    splits = [p.get("pattern", {}).get("Regex") for p in pre.get("pretokenizers", [])]
    qwen2_bpe = backend["model"]["type"] == "BPE" and QWEN2_PATTERN in splits
    cfg["tokenizer_class"] = "Qwen2Tokenizer" if qwen2_bpe else GENERIC_TOKENIZER
    cfg["padding_side"] = "left"
    path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
