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
2. logps="shared_prefix" (SharedPrefixLogps): the tensors of
   GRPOTrainer._get_per_token_logps_and_entropies, each distinct prompt computed once
   (grpo_repro.train.shared_logps), for the policy (with grad) and the reference (no grad). The
   scored logits are TRL's fused head's: under autocast (train.bf16) TRL's own kernel scores them
   (float32 gradient products; tests/unit/train/test_fast_logits.py). Falls back to TRL's method
   for multimodal inputs, MoE aux loss, a wrapped (DDP) model, a float32 LM head under autocast
   (cast_lm_head_to_fp32), an entropy bonus (its entropy carries a gradient), or an architecture
   the path is not checked on (shared_logps.CHECKED_MODEL_TYPES; the reason is logged, naming
   train.fast_step).
3. defer_old_logps=True (DeferredLogps): with num_iterations > 1, the old-policy log-probs (and a
   mirror variant's reference log-probs) that GRPOTrainer._generate_and_score_completions would
   compute by an extra forward are taken from the first loss forward on each micro-batch, by the
   policy that generated it. TRL computes old-policy log-probs by an extra no-grad forward at
   generation time when gradient_accumulation_steps is not a multiple of steps_per_generation x
   num_iterations. When steps_per_generation == gradient_accumulation_steps (always in the
   project), every micro-batch is first used in `_compute_loss` before the first optimizer step
   after its generation, i.e. by the policy that generated it: the detached log-probs of that
   first forward ARE the old log-probs (GRPOTrainer._compute_loss does the same for mu = 1). So
   `_generate_and_score_completions` makes that forward return a placeholder and drops the key;
   the first `_compute_loss` on the micro-batch stores its own detached log-probs into the
   (buffered) inputs dict right after its forward and before GRPOTrainer._compute_loss reads
   `inputs["old_per_token_logps"]`; iterations 2..mu reuse them. Mirror variants (sync_ref_model,
   alpha 1, sync every step: trl.trainer.callbacks.SyncRefModelCallback.on_step_end copies the
   policy into the reference at every step): the reference at generation IS the generating
   policy, so `ref_per_token_logps` is deferred the same way.

Parts 2 and 3 override PaperGRPOTrainer._compute_logps_and_entropies, the method behind TRL's
log-probs hook in the project's trainers, so that the two-KL loss's memo of the policy forward
(two_kl_loss) covers them.
"""

from __future__ import annotations

import logging

import torch

from grpo_repro.train.fast_rollouts import SamplerRollouts
from grpo_repro.train.shared_logps import refusal, shared_prefix_logps
from grpo_repro.train.trainer import PaperGRPOTrainer

#: the fast step's logger, named after grpo_repro.train.fast (its records say train.fast_step)
logger = logging.getLogger("grpo_repro.train.fast")


class SharedPrefixLogps:
    """Mixin of FastGRPOTrainer (before the PaperGRPOTrainer it extends): log-probs and entropies
    by the shared-prefix path when fast_options["logps"] == "shared_prefix" and the model allows
    it (module docstring), else TRL's."""

    def _compute_logps_and_entropies(
        self,
        model,
        input_ids,
        attention_mask,
        logits_to_keep,
        batch_size=None,
        compute_entropy=False,
        compute_aux_loss=False,
        **mm,
    ):
        unwrapped = self.accelerator.unwrap_model(model)
        if (
            self.fast_options["logps"] == "shared_prefix"
            and not compute_aux_loss
            and all(v is None for v in mm.values())
            and unwrapped is model
            and not self._policy_wrapped()
            and self._shared_logps_allowed(model)
            and not self.args.cast_lm_head_to_fp32  # TRL's float32 head under autocast
            and self.args.entropy_coef == 0.0  # an entropy bonus: the entropy's gradient
            and not self.args.use_adaptive_entropy
        ):
            res = shared_prefix_logps(
                model,
                input_ids,
                attention_mask,
                logits_to_keep,
                self.loss_temperature,  # the loss's (train.logprob_temperature), not sampling's
                compute_entropy,
                self.accelerator.autocast(),
            )
            if res is not None:
                logps_, ent = res
                return logps_, ent, None
        return super()._compute_logps_and_entropies(
            model,
            input_ids,
            attention_mask,
            logits_to_keep,
            batch_size,
            compute_entropy,
            compute_aux_loss,
            **mm,
        )

    def _policy_wrapped(self) -> bool:
        """True when the trained model runs wrapped (DDP, FSDP, DeepSpeed: several processes). Its
        log-probs then take TRL's path, and so do the reference's and the old policy's: one path
        for all three keeps pi / pi_ref exactly 1 where pi is pi_ref (two paths differ by round-off,
        and Adam turns a round-off gradient, e.g. of a batch whose advantages are all 0, into a
        full-size step; tests/workflow/test_multiprocess.py)."""
        return getattr(self, "model_wrapped", self.model) is not self.model

    def _shared_logps_allowed(self, model) -> bool:
        """False (TRL's log-probs, the reason logged once per model) for an architecture the
        shared-prefix path is not checked on (shared_logps.refusal)."""
        reason = refusal(model)
        if reason is not None:
            seen = self.__dict__.setdefault("_logged_refusals", set())
            if id(model) not in seen:
                seen.add(id(model))
                logger.warning(
                    "train.fast_step: log-probs by TRL's path, not the shared-prefix one: %s",
                    reason,
                )
        return reason is None


class DeferredLogps:
    """Mixin of FastGRPOTrainer (before the log-probs it defers, SharedPrefixLogps and TRL's): the
    deferral of the module docstring when fast_options["defer_old_logps"] is true and the setup
    allows it (`_deferrable_keys`)."""

    def _compute_logps_and_entropies(
        self, model, input_ids, attention_mask, logits_to_keep, *args, **kwargs
    ):
        deferred = getattr(self, "_defer_now", None)
        if deferred is not None and not torch.is_grad_enabled():
            is_ref = self.ref_model is not None and model is self.ref_model
            name = "ref_per_token_logps" if is_ref else "old_per_token_logps"
            if name in deferred:  # placeholder; filled by the first _compute_loss on this batch
                return (
                    torch.zeros(input_ids.shape[0], logits_to_keep, device=input_ids.device),
                    None,
                    None,
                )
        logps_, ent, aux = super()._compute_logps_and_entropies(
            model, input_ids, attention_mask, logits_to_keep, *args, **kwargs
        )
        fill = getattr(self, "_fill_inputs", None)
        if (
            fill is not None and torch.is_grad_enabled()
        ):  # the first loss forward on a deferred batch
            for name in self._deferred_keys:
                if name not in fill:
                    fill[name] = logps_.detach()
            self._fill_inputs = None
        return logps_, ent, aux

    def _deferrable_keys(self):
        a = self.args
        if not self.fast_options["defer_old_logps"] or not self.model.training or self.use_vllm:
            return set()
        if a.steps_per_generation != a.gradient_accumulation_steps:
            return set()
        if self.beta != 0.0 and self.ref_model is None:  # PEFT: the reference call uses
            return set()  # self.model too and could not be told apart from the old-policy one
        keys = set()
        generate_every = a.steps_per_generation * self.num_iterations
        if a.gradient_accumulation_steps % generate_every != 0:  # TRL would compute old logps
            keys.add("old_per_token_logps")
        if (
            self.beta != 0.0
            and a.sync_ref_model
            and self.ref_model is not None
            and a.ref_model_mixup_alpha == 1.0
            and a.ref_model_sync_steps == 1
        ):
            keys.add("ref_per_token_logps")
        return keys

    def _generate_and_score_completions(self, inputs):
        keys = self._deferrable_keys()
        if self.model.training:  # the keys the buffered training batches lack until their first use
            self._deferred_keys = keys
        self._defer_now = keys if keys else None
        try:
            out = super()._generate_and_score_completions(inputs)
        finally:
            self._defer_now = None
        for name in keys:
            out.pop(name, None)
        return out

    def _compute_loss(self, model, inputs):
        missing = [k for k in getattr(self, "_deferred_keys", ()) if k not in inputs]
        self._fill_inputs = inputs if missing else None
        try:
            return super()._compute_loss(model, inputs)
        finally:
            self._fill_inputs = None


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
