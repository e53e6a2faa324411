"""The logits the fast GRPO step scores (grpo_repro.train.shared_logps, config key train.fast_step):
TRL's fused LM head (trl/trainer/utils.py `add_fused_lm_head`). `score_tokens` gives each target's
log-prob (and the entropy) of the next-token distributions, through TRL's kernel under autocast.
The architectures the fast step takes (Qwen2, Llama: shared_logps.refusal) have no logit scale and
no final-logit softcapping; a float32 LM head under autocast and an entropy bonus take TRL's path
(grpo_repro.train.fast_logps)."""

from __future__ import annotations

#: tokens per chunk of TRL's kernel (TRL 1.16's own chunk size: the same float order as TRL's
#: log-probs; a constant here, not TRL's private one)
CHUNK_TOKENS = 32768


def score_tokens(lm_head, hidden, targets, temperature=1.0, compute_entropy=False):
    """(log-prob of each target, entropy or None, without gradient) of the next-token
    distributions of `hidden` (N, H) as TRL's fused LM head computes them. Under autocast this IS
    TRL's kernel (trl.kernels.ChunkedLogProbFunction, called as add_fused_lm_head calls it): logits
    projected in the autocast dtype and upcast, gradient products accumulated in float32
    (bf16-rounded products bias training, chunked_logprob.py `_addmm_fp32`; autograd through a bf16
    linear would round them). In float32 without autocast: log_softmax of the logits over the
    temperature (the same to round-off)."""
    import torch

    if torch.is_autocast_enabled(hidden.device.type):
        from trl.kernels import ChunkedLogProbFunction

        outputs = ("log_probs", "entropy") if compute_entropy else ("log_probs",)
        args = (targets, temperature, CHUNK_TOKENS, None, 1.0, outputs)
        lp, ent = ChunkedLogProbFunction.apply(hidden, lm_head.weight, lm_head.bias, *args)[:2]
        return lp, (None if ent is None else ent.detach())
    logits = lm_head(hidden).float()
    if temperature != 1.0:
        logits = logits / temperature
    logp_all = torch.log_softmax(logits, dim=-1)
    lp = logp_all.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    ent = None
    if compute_entropy:  # a metric
        with torch.no_grad():
            ent = -(logp_all.exp() * logp_all).sum(-1)
    return lp, ent
