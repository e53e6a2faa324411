"""The dress rehearsal in tests (grpo_repro.rehearsal): its configuration files and a stand-in hub
cache (a small random Qwen2 under Qwen/Qwen2.5-0.5B-Instruct, GSM8K's shipped excerpt under
openai/gsm8k), read offline through HF_HOME as a cluster's compute node reads the prefetched cache."""

from __future__ import annotations

import os
from pathlib import Path

from tests.helpers import ROOT

#: --configfile of the rehearsal in .venv (no vLLM), relative to the checkout
FILES = ["config/paper.yaml", "config/rehearsal.yaml", "config/rehearsal_hf.yaml"]
CONFIG_ARGS = ["--configfile", *FILES]


def load(**overrides):
    """The rehearsal's configuration (.venv's: config/rehearsal_hf.yaml included)."""
    from grpo_repro import config as cfg

    return cfg.load(*(ROOT / f for f in FILES), overrides=overrides or None)


def build(hf_home: Path) -> Path:
    """The stand-in hub cache of the rehearsal's configuration at `hf_home`."""
    from grpo_repro.rehearsal import build_cache

    build_cache(load(), hf_home)
    return hf_home


def env(hf_home: Path, **extra) -> dict:
    """A subprocess environment that reads the hub from `hf_home` only, offline."""
    out = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_CACHE", "HF_DATASETS_CACHE")}
    return {**out, "HF_HOME": str(hf_home), "HF_HUB_OFFLINE": "1", **extra}
