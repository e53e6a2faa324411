"""The logits the fast GRPO step scores (grpo_repro.train.shared_logps, config key train.fast_step):
TRL's fused LM head (trl/trainer/utils.py `add_fused_lm_head`). `logit_transform` reads a model
config's logit scale and final-logit softcapping as TRL does, `transform_logits` applies them and
the temperature in TRL's order, and `score_tokens` gives each target's log-prob (and the entropy)
of the next-token distributions, through TRL's kernel under autocast or with a float32 head."""

from __future__ import annotations

#: tokens per chunk of TRL's kernel (TRL 1.16's own chunk size: the same float order as TRL's
#: log-probs; a constant here, not TRL's private one)
CHUNK_TOKENS = 32768


def logit_transform(config) -> tuple[float, float | None]:
    """(logit_scale, final_logit_softcapping) of a model config, read as TRL 1.16's fused LM head
    reads them (add_fused_lm_head): logit_scale, else output_multiplier, else lm_head_multiplier,
    else 1 / logits_scaling (x logits_scaling for hyperclovax); softcapping None when absent."""
    text = config.get_text_config()
    softcap = getattr(text, "final_logit_softcapping", None)
    scale = getattr(text, "logit_scale", None)
    if scale is None:
        scale = getattr(text, "output_multiplier", None)
    if scale is None:
        scale = getattr(text, "lm_head_multiplier", None)
    if scale is None and getattr(text, "logits_scaling", None) is not None:
        s = text.logits_scaling
        scale = s if text.model_type == "hyperclovax" else 1 / s
    return (1.0 if scale is None else float(scale)), softcap


def transform_logits(z, temperature=1.0, logit_scale=1.0, softcap=None):
    """Float32 logits -> the logits scored, in TRL's order (chunked_logprob.py `_torch_transform`):
    x logit_scale, softcap * tanh(. / softcap), / temperature."""
    import torch

    if logit_scale != 1.0:
        z = z * logit_scale
    if softcap is not None:
        z = softcap * torch.tanh(z / softcap)
    if temperature != 1.0:
        z = z / temperature
    return z


def score_tokens(
    lm_head,
    hidden,
    targets,
    temperature=1.0,
    transform=(1.0, None),
    compute_entropy=False,
    entropy_grad=False,
    fp32_head=False,
):
    """(log-prob of each target, entropy or None) of the next-token distributions of `hidden` (N, H)
    as TRL's fused LM head computes them. Under autocast, or with fp32_head, this IS TRL's kernel
    (trl.kernels.ChunkedLogProbFunction, called as add_fused_lm_head calls it): logits projected in
    the autocast dtype (float32 with fp32_head, autocast off) and upcast, gradient products
    accumulated in float32 (bf16-rounded products bias training, chunked_logprob.py `_addmm_fp32`;
    autograd through a bf16 linear would round them). In float32 without autocast: log_softmax of
    the transformed logits (the same to round-off). transform: (logit_scale, softcap)."""
    import contextlib

    import torch

    scale, softcap = transform
    if fp32_head or torch.is_autocast_enabled(hidden.device.type):
        from trl.kernels import ChunkedLogProbFunction

        bias = lm_head.bias
        outputs = ("log_probs", "entropy") if compute_entropy else ("log_probs",)
        args = (targets, temperature, CHUNK_TOKENS, softcap, scale, outputs)
        if fp32_head:
            with torch.autocast(hidden.device.type, enabled=False):
                lp, ent = ChunkedLogProbFunction.apply(hidden.float(), lm_head.weight, bias, *args)[
                    :2
                ]
        else:
            lp, ent = ChunkedLogProbFunction.apply(hidden, lm_head.weight, bias, *args)[:2]
        return lp, (ent if ent is None or entropy_grad else ent.detach())
    logits = transform_logits(lm_head(hidden).float(), temperature, scale, softcap)
    logp_all = torch.log_softmax(logits, dim=-1)
    lp = logp_all.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    ent = None
    if compute_entropy:  # a metric, or (entropy bonus) a term of the loss
        with contextlib.nullcontext() if entropy_grad else torch.no_grad():
            ent = -(logp_all.exp() * logp_all).sum(-1)
    return lp, ent
