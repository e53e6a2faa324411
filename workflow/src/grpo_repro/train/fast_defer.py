"""The fast step's deferred old-policy log-probs (grpo_repro.train.fast, part defer_old_logps=True).
TRL names are those of trl.trainer.grpo_trainer (TRL 1.16.0).

With num_iterations > 1 TRL computes old-policy log-probs by an extra no-grad forward at generation
time (GRPOTrainer._generate_and_score_completions, when gradient_accumulation_steps is not a
multiple of steps_per_generation x num_iterations). When steps_per_generation ==
gradient_accumulation_steps (always in the project), every micro-batch is first used in
`_compute_loss` before the first optimizer step after its generation, i.e. by the policy that
generated it: the detached log-probs of that first forward ARE the old log-probs
(GRPOTrainer._compute_loss does the same for mu = 1). So `_generate_and_score_completions` makes
that forward return a placeholder and drops the key; the first `_compute_loss` on the micro-batch
stores its own detached log-probs into the (buffered) inputs dict right after its forward and
before GRPOTrainer._compute_loss reads `inputs["old_per_token_logps"]`; iterations 2..mu reuse them.

Mirror variants (sync_ref_model, alpha 1, sync every step: trl.trainer.callbacks.SyncRefModelCallback
.on_step_end copies the policy into the reference at every step): the reference at generation IS the
generating policy, so `ref_per_token_logps` (computed in GRPOTrainer._generate_and_score_completions)
is deferred the same way.
"""

from __future__ import annotations

import torch

__all__ = ["DeferredLogps"]


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
