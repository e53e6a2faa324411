"""TRL's private names the package touches, listed in one place (PRIVATE), each with what it buys.

TRL 1.16's public seams carry the rest: reward functions (`reward_funcs`, grpo_repro.reward),
callbacks (transformers' `TrainerCallback`: grpo_repro.train.zero_control), GRPOConfig's fields
(grpo_repro.train.args sets every loss-relevant one) and the generation backends. Its one rollout
hook, `rollout_func`, is documented as experimental ("may change or be removed at any time without
prior notice") and receives raw prompts, so the fast rollouts would re-tokenize and re-template what
TRL already did: they keep the method TRL calls with its prompt ids (`_generate_single_turn`).

The scan reads the package's source: an attribute or a method of a class whose name TRL's trainer
classes (GRPOTrainer, SFTTrainer and their transformers bases, VLLMGeneration) or TRL's trainer
modules define with a leading underscore, and a private name imported from TRL. A new private name
fails here until it is listed with its reason; a TRL upgrade that drops a listed one fails too.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from collections import defaultdict
from pathlib import Path

import pytest

pytest.importorskip("trl")

PACKAGE = Path(__file__).resolve().parents[3] / "workflow" / "src" / "grpo_repro"

#: every private TRL (or transformers Trainer) name the package touches -> what it buys
PRIVATE = {
    # the paper's objective (Sec. 2, 6): no public hook computes the advantage or the loss
    "_generate_and_score_completions": "eq. (4)'s smoothed whitened advantage in place of TRL's "
    "(train.trainer.PaperGRPOTrainer); the fast step's deferred old log-probs (train.fast.DeferredLogps)",
    "_compute_loss": "the two-KL variants' loss, Lemma 2 / Thm 9 (train.trainer.two_kl_loss); the deferred "
    "old log-probs filled on the first loss forward (train.fast.DeferredLogps)",
    "_get_per_token_logps_and_entropies": "TRL's log-probs hook: one policy forward shared by the "
    "two-KL loss's two KL terms (train.trainer); the fast step's shared-prefix log-probs behind it "
    "(train.fast.SharedPrefixLogps)",
    "_metrics": "the two-KL loss logs kl_previous beside TRL's kl (train.trainer.two_kl_loss)",
    # a resumed run equals an uninterrupted one (transformers' Trainer)
    "_get_train_sampler": "an epoch-seeded prompt order, so a run resumed at an epoch boundary "
    "sees the same order (train.trainer.EpochSeededRepeatSampler)",
    "_load_from_checkpoint": "the mirror variants' anchor pi_{n-1} restored on resume "
    "(train.trainer)",
    # speed, the same sampling distribution and loss (train.fast, workflow/benchmarks/bench_train.py)
    "_generate_single_turn": "the fast step's rollouts: TRL's prompt ids answered by the batched "
    "sampler (train.fast_rollouts)",
    "_use_triton": "SFT scores the completion positions only on CPU (train.sft.compact_lm_head)",
    # vLLM's CPU engine in colocate mode (the rehearsal on vLLM's CPU engine; train.vllm_colocate)
    "_iter_named_params": "the weights TRL's colocated vLLM engine reloads after each step, on CPU",
}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _trl_private_names() -> set[str]:
    """Private names of TRL's trainer classes (their TRL and transformers bases: class attributes
    and `self._x =` assignments) and of TRL's trainer and generation modules."""
    from trl import GRPOTrainer, SFTTrainer
    from trl.generation.vllm_generation import VLLMGeneration

    names = set()
    for cls in (GRPOTrainer, SFTTrainer, VLLMGeneration):
        for k in cls.__mro__:
            if k.__module__.split(".")[0] not in ("trl", "transformers"):
                continue
            names |= {n for n in vars(k) if _private(n)}
            tree = ast.parse(textwrap.dedent(inspect.getsource(k)))
            names |= {
                n.attr
                for n in ast.walk(tree)
                if isinstance(n, ast.Attribute)
                and isinstance(n.ctx, ast.Store)
                and _private(n.attr)
            }
    for module in (
        "trl.trainer.utils",
        "trl.trainer.grpo_trainer",
        "trl.generation.vllm_generation",
    ):
        names |= {n for n in vars(importlib.import_module(module)) if _private(n)}
    return names


def _package_sources() -> dict[str, str]:
    return {str(p.relative_to(PACKAGE)): p.read_text() for p in sorted(PACKAGE.rglob("*.py"))}


def _touched(trl_names: set[str], sources: dict[str, str]) -> dict[str, set[str]]:
    """{TRL's private name: the files of `sources` that touch it}: attribute reads and writes,
    methods defined in a class (an override), and names imported from trl or transformers."""
    found = defaultdict(set)
    for rel, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            names, imported = [], False
            if isinstance(node, ast.Attribute):
                names = [node.attr]
            elif isinstance(node, ast.ClassDef):
                names = [f.name for f in node.body if isinstance(f, ast.FunctionDef)]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                ("trl", "transformers")
            ):
                names, imported = [a.name for a in node.names], True
            for name in names:
                if _private(name) and (imported or name in trl_names):
                    found[name].add(rel)
    return dict(found)


def _unlisted(sources: dict[str, str]) -> dict[str, list[str]]:
    touched = _touched(_trl_private_names(), sources)
    return {n: sorted(f) for n, f in touched.items() if n not in PRIVATE}


def test_every_private_trl_name_the_package_touches_is_listed():
    sources = _package_sources()
    new = _unlisted(sources)
    assert not new, f"private TRL names not in PRIVATE (list each with what it buys): {new}"
    gone = sorted(set(PRIVATE) - set(_touched(_trl_private_names(), sources)))
    assert not gone, f"listed in PRIVATE but no longer touched (remove them): {gone}"


def test_every_listed_name_exists_in_the_installed_trl():
    missing = sorted(set(PRIVATE) - _trl_private_names())
    assert not missing, f"the installed TRL lacks {missing}: port these seams or pin trl==1.16.0"


@pytest.mark.parametrize(
    "text, name",
    [
        ("step = trainer._last_loaded_step\n", "_last_loaded_step"),  # an attribute read
        ("class T:\n    def _prepare_inputs(self, x):\n        return x\n", "_prepare_inputs"),
        ("from trl.trainer.utils import _is_port_free\n", "_is_port_free"),
    ],
)
def test_the_scan_catches_a_new_private_name(text, name):
    """Another private TRL name in a package file fails the listing test (the check can fail)."""
    assert _unlisted({**_package_sources(), "train/probe.py": text}) == {name: ["train/probe.py"]}
