"""The fast step's log-probs (grpo_repro.train.fast, part logps="shared_prefix"): the tensors of
TRL's GRPOTrainer._get_per_token_logps_and_entropies (TRL 1.16.0), each distinct prompt computed
once (grpo_repro.train.shared_logps). Used for the policy (with grad) and the reference (no grad),
through PaperGRPOTrainer._compute_logps_and_entropies (the method behind TRL's hook in the
project's trainers; grpo_repro.train.trainer).

The scored logits are TRL's fused head's: under autocast (train.bf16) TRL's own kernel scores them
(float32 gradient products; tests/unit/train/test_fast_logits.py). Falls back to TRL's method for
multimodal inputs, MoE aux loss, a wrapped (DDP) model, a float32 LM head under autocast
(cast_lm_head_to_fp32), an entropy bonus (its entropy carries a gradient), or an architecture the
path is not checked on (shared_logps.CHECKED_MODEL_TYPES; the reason is logged, naming
train.fast_step).
"""

from __future__ import annotations

import logging

from grpo_repro.train.shared_logps import refusal, shared_prefix_logps

__all__ = ["SharedPrefixLogps"]
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
                self.temperature,
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
