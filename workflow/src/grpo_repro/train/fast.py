"""The fast GRPO training step (config key train.fast_step): the same loss and the same sampling
distribution as TRL 1.16, about 3x faster per optimizer step on CPU (workflow/benchmarks/bench_train.py).

FastGRPOTrainer subclasses the project's PaperGRPOTrainer (grpo_repro.train.trainer, itself a TRL
GRPOTrainer subclass; importing this module imports TRL); grpo_repro.train.grpo.build_trainer uses it
when train.fast_step is true. Its three parts, each a mixin overriding TRL's methods (named as in
trl.trainer.grpo_trainer, TRL 1.16.0) and switched off alone by fast_options; tests/unit/train/
test_fast.py pins what is relied on:

1. rollouts="sampler" (grpo_repro.train.fast_rollouts.SamplerRollouts): TRL's hook
   GRPOTrainer._generate_single_turn answered by the project's batched sampler, fed with TRL's
   prompt ids, with a seed per prompt group and optimizer step; falls back to TRL's path for vLLM,
   continuous batching, images, tools, min_p, repetition_penalty != 1 and generation_kwargs.
2. logps="shared_prefix" (grpo_repro.train.fast_logps.SharedPrefixLogps): the tensors of
   GRPOTrainer._get_per_token_logps_and_entropies, each distinct prompt computed once
   (grpo_repro.train.shared_logps), for the policy (with grad) and the reference (no grad).
3. defer_old_logps=True (grpo_repro.train.fast_defer.DeferredLogps): with num_iterations > 1, the
   old-policy log-probs (and a mirror variant's reference log-probs) that
   GRPOTrainer._generate_and_score_completions would compute by an extra forward are taken from
   the first loss forward on each micro-batch, by the policy that generated it.

Parts 2 and 3 override PaperGRPOTrainer._compute_logps_and_entropies, the method behind TRL's
log-probs hook in the project's trainers, so that the two-KL loss's memo of the policy forward
(grpo_repro.train.two_kl) covers them.
"""

from __future__ import annotations

from grpo_repro.train.fast_defer import DeferredLogps
from grpo_repro.train.fast_logps import SharedPrefixLogps
from grpo_repro.train.fast_rollouts import SamplerRollouts, TokenSampler, group_rows
from grpo_repro.train.trainer import PaperGRPOTrainer

__all__ = ["FastGRPOTrainer", "PaperGRPOTrainer", "TokenSampler", "group_rows"]
FAST_DEFAULTS = {"rollouts": "sampler", "logps": "shared_prefix", "defer_old_logps": True}


class FastGRPOTrainer(SamplerRollouts, DeferredLogps, SharedPrefixLogps, PaperGRPOTrainer):
    """PaperGRPOTrainer with the fast step. fast_options: {"rollouts": "sampler" | "trl",
    "logps": "shared_prefix" | "trl", "defer_old_logps": bool} (defaults: all fast; the benchmark
    switches each part off to measure it alone); the other arguments are GRPOTrainer's.

    Method resolution: DeferredLogps (placeholder, fill) wraps SharedPrefixLogps, which falls back
    to PaperGRPOTrainer's (TRL's) log-probs; DeferredLogps._generate_and_score_completions and
    _compute_loss wrap PaperGRPOTrainer's (the paper's advantage, the two-KL loss)."""

    def __init__(self, *args, fast_options: dict | None = None, **kwargs):
        unknown = set(fast_options or {}) - set(FAST_DEFAULTS)
        if unknown:
            raise ValueError(
                f"unknown fast_options {sorted(unknown)}; expected {sorted(FAST_DEFAULTS)}"
            )
        self.fast_options = {**FAST_DEFAULTS, **(fast_options or {})}
        super().__init__(*args, **kwargs)
