"""The paper's setup (Sec. 6, App. A) beside this run's (results/summary.json, paper_comparison):
the paper's headline numbers (21% for pi_ref, 37.5% after one epoch of GRPO), the configuration
keys that determine them, and the keys of a configuration that differ from the paper's or from
another configuration (a training run's recorded keys against the workflow's)."""

from __future__ import annotations

import math

#: Sec. 6 of the paper (GSM8K test, 1319 questions, 50 samples each, Qwen2.5-0.5B-Instruct)
PAPER = {
    "ref_mean_success": 0.21,
    "final_mean_success": 0.375,
    "variant": "grpo",
    "split": "test",
    "dataset": "GSM8K test (1319 questions), 50 samples per question",
    "model": "Qwen/Qwen2.5-0.5B-Instruct",
    "training": "TRL GRPO, one epoch of the GSM8K train split",
}

#: (config key path, the paper's value) of every stated setting that determines the numbers
PAPER_SETUP = [
    (("data", "source"), "gsm8k"),
    (("data", "n_test"), None),
    (("data", "n_train"), None),
    (("model", "name_or_path"), "Qwen/Qwen2.5-0.5B-Instruct"),
    (("train", "on_pool"), False),
    (("train", "max_steps"), None),
    (("train", "beta"), 0.1),
    (("train", "clip_eps"), 0.2),
    (("train", "learning_rate"), 5e-6),
    (("train", "num_iterations"), 10),
    (("train", "num_generations"), 16),
    (("train", "prompts_per_step"), 28),
    (("train", "temperature"), 0.1),
    (("train", "max_completion_length"), 200),
    (("eval", "samples"), 50),
]


def _get(d: dict, path):
    for k in path:
        d = d[k]
    return d


def _same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=0.0)
    return a == b


def paper_deviations(config: dict) -> list[dict]:
    """Configuration keys whose value differs from the paper's stated setup (Sec. 6, App. A)."""
    out = []
    for path, paper in PAPER_SETUP:
        try:
            ours = _get(config, path)
        except (KeyError, TypeError):
            ours = "<missing>"
        if not _same(ours, paper):
            out.append({"key": ".".join(path), "ours": ours, "paper": paper})
    return out


def restrict(full, like):
    """`full` cut down to the keys (nested) that `like` has."""
    if isinstance(full, dict) and isinstance(like, dict):
        return {k: restrict(full.get(k, "<missing>"), v) for k, v in like.items()}
    return full


def config_diff(a, b, prefix="") -> list[str]:
    """Dotted keys where two nested configurations differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            out += config_diff(a.get(k, "<missing>"), b.get(k, "<missing>"), f"{prefix}{k}.")
        return out
    return [] if _same(a, b) else [prefix.rstrip(".")]
