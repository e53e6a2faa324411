"""The two-KL variants' loss (Lemma 2, Thm 9; docs/theory.md Sec. 2 (c)): TRL's GRPO loss with the
KL term beta [alpha KL(pi || pi_ref) + (1 - alpha) KL(pi || pi_{n-1})], pi_{n-1} the policy that
sampled the batch (mirror's anchor, Thm 4-5), both terms by the same estimator (train.kl_estimator).

TRL's loss L(r) = PG + beta agg(k(r, pi)) is affine in its per-token KL estimate k(r, pi) (k3, or
k3 x pi/pi_old for k3_ratio) and agg (the token aggregation of train.loss_type) is linear, so for
weights w_ref + w_prev = 1

    w_ref L(log pi_ref) + w_prev L(log pi_{n-1}) = PG + beta agg(w_ref k(pi_ref, pi) + w_prev k(pi_{n-1}, pi)):

`two_kl_loss` evaluates TRL's own loss twice on one policy forward, the second time with the
reference log-probs replaced by the sampling policy's. pi_{n-1}'s log-probs are TRL's
old_per_token_logps (num_iterations mu > 1: computed at generation, or deferred to the first loss
forward by grpo_repro.train.fast); with mu = 1 TRL keeps none and uses the policy's own detached
log-probs, so the previous-policy term is 0 with gradient 0, as mirror's is. Weights (1, 0) give
grpo's loss and (0, 1) mirror's, bit for bit (1 x a + 0 x b = a).

Imports no TRL: grpo_repro.train.trainer.PaperGRPOTrainer._compute_loss calls it with TRL's
_compute_loss, for PaperGRPOTrainer and FastGRPOTrainer alike.

TRL 1.16 has no seam for the KL term itself: GRPOTrainer._compute_loss computes the per-token KL
inline, from inputs["ref_per_token_logps"] and the policy's log-probs (no method, no hook, no
callback in between), and then aggregates the whole loss. Hence the two evaluations of TRL's own
loss, the second with the reference log-probs swapped in the inputs. Its overridable methods are
the seams used: GRPOTrainer._compute_loss (PaperGRPOTrainer._compute_loss), and
GRPOTrainer._get_per_token_logps_and_entropies, which _compute_loss calls through `self` for the
policy's forward: PaperGRPOTrainer overrides it to reuse the first evaluation's forward while
trainer._logps_memo is set (FastGRPOTrainer's fast log-probs included: it overrides
PaperGRPOTrainer._compute_logps_and_entropies, which the memo wraps).
"""

from __future__ import annotations

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
