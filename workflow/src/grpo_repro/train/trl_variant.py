"""GRPO variants of the paper mapped onto TRL's GRPOConfig (Sec. 3-5, Thm 2, 4-5; Sec. 5 Dr. GRPO).

The variants are the records of grpo_repro.variants; a record's KL anchor and normalisation fix
its TRL settings (`trl_settings`):

| record                 | value       | TRL settings                                           |
|------------------------|-------------|--------------------------------------------------------|
| ref_anchored           | True        | KL to pi_ref (Thm 1-2): no reference sync              |
| prev_anchored          | True        | KL to the previous policy (Thm 4-5): sync_ref_model,   |
|                        |             | mixup alpha 1, sync every step                         |
| two_kl                 | True        | KL to pi_ref (no sync) and to the sampling policy,     |
|                        |             | weights kl_weights(train.two_kl_alpha) (Lemma 2, Thm 9:|
|                        |             | grpo_repro.train.trainer)                              |
| mean_only              | False       | scale_rewards group (or the paper's eq. 4)             |
| mean_only              | True        | A = r - p (Dr. GRPO): scale_rewards none               |

A variant changes the anchor and the advantage only, as the paper's Sec. 3-5 do. The token
aggregation of the loss (TRL's loss_type) is the config key train.loss_type, the same for every
variant: TRL's `dr_grpo` loss type (summed token losses / (batch x max_completion_length), the
Dr. GRPO paper's length-bias fix) would also change how sequences of different lengths are
weighted, which the paper's Sec. 5 does not analyse; it stays available through that key.

Mirror in TRL: the reference model is overwritten by the policy after every optimizer step and the
reference log-probs are taken when a batch is generated, so the anchor is the policy that sampled
the batch. With num_iterations (mu) = 1 the policy equals that anchor at every gradient step and
the KL term is exactly 0: mirror only acts with mu > 1.
"""

from __future__ import annotations

from grpo_repro import variants as reg


def trl_settings(variant: str, advantage: str, alpha: float | None = None) -> dict:
    """GRPOConfig keyword arguments that define `variant` (advantage: 'paper' or 'trl'), from its
    record in grpo_repro.variants; alpha: the two-KL weight (train.two_kl_alpha), read only by the
    two-KL variants.

    `paper_advantage` is not a TRL field: it switches on the eq. (4) rescaling of PaperGRPOTrainer;
    `kl_weights` (two-KL variants only, no key otherwise) the loss of grpo_repro.train.trainer.two_kl_loss.
    """
    v = reg.get(variant, key="config key variants")
    sync = v.prev_anchored  # the anchor is the policy that sampled the batch
    settings = {
        # mean-only: A = r - mean; the paper's eq. (4) is built from that in PaperGRPOTrainer
        "scale_rewards": "none" if (v.mean_only or advantage == "paper") else "group",
        "sync_ref_model": sync,
        "ref_model_mixup_alpha": 1.0 if sync else 0.6,  # 0.6 = TRL default, unused
        "ref_model_sync_steps": 1 if sync else 512,  # 512 = TRL default, unused
        "paper_advantage": advantage == "paper" and not v.mean_only,
    }
    if v.two_kl:  # pi_ref as TRL's reference (no sync) + the sampling policy's term
        settings["kl_weights"] = v.kl_weights(alpha)
    return settings


def paper_advantage(adv0, group_size: int, eps: float):
    """The paper's smoothed whitened advantage, eq. (4), A = (r - p) / sqrt(p (1 - p) + eps), from
    TRL's mean-only advantages A0 = r - p_hat laid out in contiguous groups: for binary rewards the
    group mean of A0^2 is p_hat (1 - p_hat), so A = A0 / sqrt(mean_group(A0^2) + eps)."""
    import torch

    groups = adv0.view(-1, group_size)
    var = (groups**2).mean(dim=1, keepdim=True)  # = p_hat (1 - p_hat) for binary rewards
    return (groups / torch.sqrt(var + eps)).reshape(adv0.shape)
