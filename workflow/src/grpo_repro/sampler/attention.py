"""Shared-prefix (cascade) attention: attend to [prompt prefix ; generated suffix] in two parts
merged by log-sum-exp, without copying the prompt's keys/values per sample (grpo_repro.sampler)."""

from __future__ import annotations

import contextlib
import contextvars

SHARED_ATTN = "grpo_repro_shared_prefix"
#: the state of a custom attention function (SharedState here, the fast training step's PackedState)
#: during the forwards inside `carrying`. Models that pass a mask mapping through to the attention
#: (Qwen2: attention_mask={"full_attention": state}) hand the state over as the mask; models that
#: always rebuild their mask (Llama: create_causal_mask returns None for an attention function with
#: no mask function) drop it, and the attention function reads it here (`carried`).
_CARRIED: contextvars.ContextVar = contextvars.ContextVar("grpo_repro_attention", default=None)


@contextlib.contextmanager
def carrying(state):
    """Within: `carried` finds `state` whatever the model did with the attention mask."""
    token = _CARRIED.set(state)
    try:
        yield
    finally:
        _CARRIED.reset(token)


def carried(attention_mask, kind):
    """The custom attention's state: the mask itself when it is a `kind`, else the state of the
    enclosing `carrying` when it is one, else None (plain attention)."""
    if isinstance(attention_mask, kind):
        return attention_mask
    state = _CARRIED.get()
    return state if isinstance(state, kind) else None


class SharedState:
    """What the shared-prefix attention needs besides q/k/v; passed to it as the attention 'mask'
    (transformers forwards a precomputed mask mapping untouched to the attention function)."""

    def __init__(self, cache, mask2d):
        import torch

        self.cache = cache
        self.decoding = False
        p, length = mask2d.shape
        valid = mask2d.bool()
        causal = torch.ones(length, length, dtype=torch.bool, device=mask2d.device).tril_()
        allowed = causal.unsqueeze(0) & valid.unsqueeze(1)
        allowed |= torch.eye(length, dtype=torch.bool, device=mask2d.device)  # pad queries: no NaN
        self.prefill_mask = allowed.unsqueeze(1)  # (P, 1, L, L)
        self.prefix_bias = torch.zeros(p, 1, 1, length, device=mask2d.device).masked_fill_(
            ~valid[:, None, None, :], float("-inf")
        )
        self.n_prompts = p
        self.n_slots = 0
        self.row_prompt = self.row_slot = None

    def set_rows(self, row_prompt):
        """The decoding batch: row i belongs to prompt row_prompt[i] (rows grouped by prompt)."""
        import torch

        self.decoding = True
        counts = torch.bincount(row_prompt, minlength=self.n_prompts)
        starts = counts.cumsum(0) - counts
        self.row_prompt = row_prompt
        self.row_slot = torch.arange(len(row_prompt), device=row_prompt.device) - starts[row_prompt]
        self.n_slots = int(counts.max())


def _shared_prefix_attention(
    module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs
):
    """Attention over [prompt prefix ; generated suffix] without the prefix copied per sample.
    Output (batch, q_len, heads, head_dim), like transformers' sdpa_attention_forward."""
    import torch
    import torch.nn.functional as F

    state = carried(attention_mask, SharedState)
    if state is None:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    rows, h_q, q_len, d = query.shape
    h_kv = key.shape[2] if state.decoding else key.shape[1]  # decode: time-major suffix
    g = h_q // h_kv
    if not state.decoding:  # prefill: causal + padding mask over the prompt
        if g > 1:
            key, value = key.repeat_interleave(g, dim=1), value.repeat_interleave(g, dim=1)
        out = F.scaled_dot_product_attention(
            query, key, value, attn_mask=state.prefill_mask, scale=scale
        )
        return out.transpose(1, 2).contiguous(), None
    if q_len != 1:
        raise RuntimeError("shared-prefix attention decodes one token at a time")
    layer = state.cache.layers[module.layer_idx]
    p, s = state.n_prompts, state.n_slots
    # softmax statistics in float32 whatever the model dtype (bf16 sums of exponentials drift)
    q = query.reshape(rows, h_kv, g, d).float()
    prefix_k, prefix_v = layer.prefix_k.float(), layer.prefix_v.float()
    key, value = key.float(), value.float()
    # prefix part: one (slots*g x d) @ (d x L) product per prompt and kv head
    qpad = q.new_zeros((p, s, h_kv, g, d))
    qpad[state.row_prompt, state.row_slot] = q
    qpad = qpad.permute(0, 2, 1, 3, 4).reshape(p, h_kv, s * g, d)
    sp = torch.matmul(qpad, prefix_k.transpose(-1, -2)).mul_(scale).add_(state.prefix_bias)
    mp = sp.amax(-1, keepdim=True)
    ep = sp.sub_(mp).exp_()
    lp = ep.sum(-1, keepdim=True)
    op = torch.matmul(ep, prefix_v)

    def per_row(x):  # (P, H_kv, S*g, c) -> (rows, H_kv, g, c)
        x = x.view(p, h_kv, s, g, x.shape[-1]).permute(0, 2, 1, 3, 4)
        return x[state.row_prompt, state.row_slot]

    mp, lp, op = per_row(mp), per_row(lp), per_row(op)
    # suffix part: the row's own generated tokens (current one included)
    # key/value: time-major (t, rows, H_kv, D) (a few tokens per row: contiguous einsums beat
    # thousands of tiny batched matmuls on CPU)
    ss = torch.einsum("rhgd,trhd->trhg", q, key).mul_(scale)
    ms = ss.amax(0)
    es = ss.sub_(ms).exp_()
    ls = es.sum(0).unsqueeze(-1)
    os_ = torch.einsum("trhg,trhd->rhgd", es, value)
    ms = ms.unsqueeze(-1)
    m = torch.maximum(mp, ms)
    a, b = (mp - m).exp_(), (ms - m).exp_()
    out = (op * a + os_ * b) / (lp * a + ls * b)
    return out.reshape(rows, 1, h_q, value.shape[-1]).to(query.dtype), None


def register_shared_attention() -> None:
    from transformers import AttentionInterface

    AttentionInterface.register(SHARED_ATTN, _shared_prefix_attention)


def supports_shared_prefix(model) -> bool:
    """True when `model` can use the shared-prefix attention: every layer is full attention, the
    model dispatches attention through AttentionInterface and runs sdpa/eager attention now."""
    cfg = model.config
    layer_types = getattr(cfg, "layer_types", None) or ["full_attention"]
    if set(layer_types) != {"full_attention"}:
        return False
    if getattr(cfg, "_attn_implementation", None) not in ("sdpa", "eager", None):
        return False
    can = getattr(model, "_can_set_attn_implementation", None)
    try:
        return bool(can()) if callable(can) else False
    except Exception:
        return False
