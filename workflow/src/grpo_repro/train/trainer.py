"""The project's GRPO trainer: TRL 1.16's GRPOTrainer with the paper's smoothed whitened advantage,
eq. (4) (grpo_repro.train.trl_variant.paper_advantage), an epoch-seeded prompt order, the mirror
variants' anchor restored on resume, the two-KL variants' loss (Lemma 2, Thm 9) and the loss's
log-probs at a temperature of their own (train.logprob_temperature: the paper's TRL computed them at
1 while it sampled at 0.1) (Sec. 2 objective, Sec. 6 experiment).

The two-KL loss (docs/theory.md Sec. 2 (c)) is TRL's GRPO loss with the KL term
beta [alpha KL(pi || pi_ref) + (1 - alpha) KL(pi || pi_{n-1})], pi_{n-1} the policy that sampled the
batch (mirror's anchor, Thm 4-5), both terms by the same estimator (train.kl_estimator). TRL's loss
L(r) = PG + beta agg(k(r, pi)) is affine in its per-token KL estimate k(r, pi) (k3, or
k3 x pi/pi_old for k3_ratio) and agg (the token aggregation of train.loss_type) is linear, so for
weights w_ref + w_prev = 1

    w_ref L(log pi_ref) + w_prev L(log pi_{n-1}) = PG + beta agg(w_ref k(pi_ref, pi) + w_prev k(pi_{n-1}, pi)):

`two_kl_loss` evaluates TRL's own loss twice on one policy forward, the second time with the
reference log-probs replaced by the sampling policy's. pi_{n-1}'s log-probs are TRL's
old_per_token_logps (num_iterations mu > 1: computed at generation, or deferred to the first loss
forward by grpo_repro.train.fast); with mu = 1 TRL keeps none and uses the policy's own detached
log-probs, so the previous-policy term is 0 with gradient 0, as mirror's is. Weights (1, 0) give
grpo's loss and (0, 1) mirror's, bit for bit (1 x a + 0 x b = a).

TRL 1.16 has no seam for the KL term itself: GRPOTrainer._compute_loss computes the per-token KL
inline, from inputs["ref_per_token_logps"] and the policy's log-probs (no method, no hook, no
callback in between), and then aggregates the whole loss. Hence the two evaluations of TRL's own
loss, the second with the reference log-probs swapped in the inputs. Its overridable methods are
the seams used: GRPOTrainer._compute_loss (PaperGRPOTrainer._compute_loss), and
GRPOTrainer._get_per_token_logps_and_entropies, which _compute_loss calls through `self` for the
policy's forward: PaperGRPOTrainer overrides it to reuse the first evaluation's forward while
trainer._logps_memo is set (FastGRPOTrainer's fast log-probs included: it overrides
PaperGRPOTrainer._compute_logps_and_entropies, which the memo wraps).

This module imports TRL at its top: it (and grpo_repro.train.fast, which subclasses it) is imported
lazily, in grpo_repro.train.grpo.build_trainer, so that the rest of the package loads without TRL.
"""

from __future__ import annotations

from trl import GRPOTrainer
from trl.trainer.utils import RepeatSampler

from grpo_repro.train.trl_variant import paper_advantage


class EpochSeededRepeatSampler(RepeatSampler):
    """TRL's RepeatSampler draws each epoch's order from one generator seeded once, so a run
    resumed at an epoch boundary replays epoch 0's order. Here epoch e's order depends only on
    (seed, e), set by the Trainer's set_epoch(e): a resumed run sees the same order."""

    epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __iter__(self):
        if self.shuffle:
            self.generator.manual_seed((self.seed or 0) * 1_000_003 + self.epoch)
        return super().__iter__()


class PaperGRPOTrainer(GRPOTrainer):
    """GRPOTrainer with the paper's eq. (4) advantage when `paper_eps` is set (else TRL's), and the
    two-KL loss when `kl_weights` = (w_ref, w_prev) is set (else TRL's loss, unchanged)."""

    paper_eps: float | None = None
    kl_weights: tuple[float, float] | None = None  # two-KL variants only (two_kl_loss)
    #: the temperature of the loss's log-probs when it is not the sampling one (train.
    #: logprob_temperature: use_logprob_temperature); None: TRL's, the sampling temperature
    logprob_temperature: float | None = None
    #: set by two_kl_loss while it runs: [the policy forward's result], shared by its two evaluations
    _logps_memo: list | None = None

    @property
    def loss_temperature(self) -> float:
        """The temperature the loss's log-probs (ratio, clip, KL) divide the logits by."""
        return self.temperature if self.logprob_temperature is None else self.logprob_temperature

    def use_logprob_temperature(self, t: float) -> None:
        """The loss's log-probs of the policy, the sampling policy and pi_ref at logits / t instead
        of TRL 1.16's logits / temperature (the paper's TRL, before its #3029 of 2025-03-11: t = 1).
        TRL puts the temperature into the fused LM head it adds to both models in __init__
        (trl.trainer.utils.add_fused_lm_head, which every log-prob of the loss goes through); the
        head is added again at t, with TRL's other arguments. t = the sampling temperature changes
        nothing."""
        if float(t) == float(self.temperature):
            return
        from trl.trainer.utils import add_fused_lm_head

        fp32 = self.args.cast_lm_head_to_fp32
        add_fused_lm_head(self.model, t, fp32, outputs=("log_probs", "entropy"))
        if self.ref_model is not None:
            add_fused_lm_head(self.ref_model, t, fp32)
        self.logprob_temperature = float(t)

    def _get_train_sampler(self, dataset=None):
        base = super()._get_train_sampler(dataset)
        return EpochSeededRepeatSampler(
            base.data_source,
            base.mini_repeat_count,
            base.batch_size,
            base.repeat_count,
            base.shuffle,
            base.seed,
        )

    def _load_from_checkpoint(self, resume_from_checkpoint, model=None):
        """Mirror variants: the anchor is the policy of the last step, which TRL does not
        checkpoint; after a resume it would be pi_ref. Restore it from the resumed policy."""
        super()._load_from_checkpoint(resume_from_checkpoint, model)
        if self.args.sync_ref_model and self.ref_model is not None:
            policy = self.accelerator.unwrap_model(self.model)
            self.ref_model.load_state_dict(policy.state_dict())

    def _generate_and_score_completions(self, inputs):
        out = super()._generate_and_score_completions(inputs)
        if self.paper_eps is not None and self.model.training:
            out["advantages"] = paper_advantage(
                out["advantages"], self.num_generations, self.paper_eps
            )
        return out

    def _get_per_token_logps_and_entropies(self, *args, **kwargs):
        """TRL's log-probs hook (GRPOTrainer._compute_loss calls it for the policy's forward,
        GRPOTrainer._generate_and_score_completions for the old policy's and the reference's):
        `_compute_logps_and_entropies`, whose first result is reused while `_logps_memo` is set
        (two_kl_loss: one policy forward for both of its evaluations)."""
        memo = self._logps_memo
        if memo is None:
            return self._compute_logps_and_entropies(*args, **kwargs)
        if not memo:
            memo.append(self._compute_logps_and_entropies(*args, **kwargs))
        return memo[0]

    def _compute_logps_and_entropies(self, *args, **kwargs):
        """TRL's (GRPOTrainer._get_per_token_logps_and_entropies). FastGRPOTrainer overrides this
        method, not TRL's hook, so that the two-KL memo of the hook covers its path as well."""
        return super()._get_per_token_logps_and_entropies(*args, **kwargs)

    def _compute_loss(self, model, inputs):
        """TRL's loss; two-KL variants: beta [w_ref KL(pi || pi_ref) + w_prev KL(pi || pi_{n-1})]
        in place of TRL's KL term (Lemma 2, Thm 9; two_kl_loss)."""
        if self.kl_weights is None or self.beta == 0.0:
            return super()._compute_loss(model, inputs)
        return two_kl_loss(self, super()._compute_loss, model, inputs)


#: the metric the second evaluation's KL estimate is logged under (TRL's `kl` stays KL to pi_ref)
KL_PREVIOUS = "kl_previous"


def two_kl_loss(trainer, trl_loss, model, inputs):
    """w_ref L(pi_ref) + w_prev L(pi_{n-1}) (module docstring), (w_ref, w_prev) = trainer.kl_weights
    (grpo_repro.variants.Variant.kl_weights). trl_loss: TRL's _compute_loss, bound to `trainer`.

    The policy's log-probs are computed once: the first evaluation's forward is reused by the
    second. The metrics are the first evaluation's, plus KL_PREVIOUS from the second."""
    w_ref, w_prev = trainer.kl_weights
    seen = []
    mode = "train" if trainer.model.training else "eval"
    metrics = trainer._metrics[mode]
    trainer._logps_memo = seen  # PaperGRPOTrainer._get_per_token_logps_and_entropies fills, reuses
    try:
        loss_ref = trl_loss(model, inputs)
        prev = inputs.get("old_per_token_logps")  # mu > 1 (deferred ones are filled by now)
        if prev is None:  # mu = 1: TRL's old log-probs are the policy's own, detached
            prev = seen[0][0].detach()
        marks = {k: len(v) for k, v in metrics.items()}
        loss_prev = trl_loss(model, {**inputs, "ref_per_token_logps": prev})
    finally:
        trainer._logps_memo = None
    kl_prev = metrics["kl"][marks.get("kl", 0) :]
    for key in list(metrics):  # the second evaluation's entries: only its KL estimate is kept
        del metrics[key][marks.get(key, 0) :]
        if not metrics[key]:
            del metrics[key]
    metrics[KL_PREVIOUS].extend(kl_prev)
    return w_ref * loss_ref + w_prev * loss_prev
