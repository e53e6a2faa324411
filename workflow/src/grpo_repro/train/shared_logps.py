"""Per-token log-probs of GRPO completions with each distinct prompt computed once (the fast
training step, config key train.fast_step; the quantity TRL 1.16's
`GRPOTrainer._get_per_token_logps_and_entropies` returns).

TRL runs the whole [left-padded prompt ; right-padded completion] of every row through the model
and scores every position. Here: (a) each DISTINCT prompt goes through the decoder once (the G
completions of a group share it), with grad, keeping its keys/values; (b) only the real completion
tokens go through a second pass, packed without padding (the last token of a completion is not an
input: its prediction is never used), attending through a registered attention function to
[own prompt's keys ; own earlier completion tokens]; (c) the LM head runs on completion positions
only. Position ids are TRL's (arange over the padded row: TRL calls the model without
position_ids). Autograd sums the gradients of the G uses of a prompt. Mathematically the same;
float rounding differs (~1e-6 on log-probs; tests/unit/train/test_fast.py).

The scored logits are TRL's fused LM head's (trl/trainer/utils.py `add_fused_lm_head`;
`score_tokens`): under autocast (train.bf16) the head IS TRL's kernel
(projection in the autocast dtype, upcast; float32 accumulation of the gradient products); in
float32 a log_softmax of the logits over the temperature, equal to round-off. The architectures
the fast step takes have no logit scale and no final-logit softcapping; a float32 LM head under
autocast and an entropy bonus take TRL's path (grpo_repro.train.fast).
Architectures other than CHECKED_MODEL_TYPES are not computed here (`refusal`): the trainer falls
back to TRL's path and logs why.
"""

from __future__ import annotations

PACKED_ATTN = "grpo_repro_packed_completions"
#: model types whose shared-prefix log-probs are checked against TRL's (tests/unit/train/test_fast*.py)
CHECKED_MODEL_TYPES = ("qwen2", "llama")


def refusal(model) -> str | None:
    """Why the shared-prefix path must not compute `model`'s log-probs (None: it may)."""
    model_type = model.config.get_text_config().model_type
    if model_type not in CHECKED_MODEL_TYPES:
        return (
            f"model_type {model_type!r} is not among the architectures the shared-prefix log-probs "
            f"are checked on {CHECKED_MODEL_TYPES}"
        )
    return None


class PackedState:
    """Passed as the attention 'mask' of the packed completion forward (transformers hands a dict
    mask mapping to the attention function untouched): the completion tokens of all rows are one
    sequence of N real tokens (no padding); token i is column cols[i] of row rows[i]. Per layer, the
    prompt keys/values (U distinct prompts) come from the prompt forward's cache."""

    def __init__(self, cache, inverse, prefix_mask, rows, cols, n_rows, width):
        import torch

        self.cache, self.inverse, self.rows, self.cols = cache, inverse, rows, cols
        self.n_rows, self.width = n_rows, width
        valid = torch.zeros((n_rows, width), dtype=torch.bool, device=rows.device)
        valid[rows, cols] = True
        causal = torch.ones((width, width), dtype=torch.bool, device=rows.device).tril_()
        suffix = causal.unsqueeze(0) & valid.unsqueeze(1)  # (B, Cq, Ck)
        prefix = prefix_mask.bool()[inverse].unsqueeze(1).expand(-1, width, -1)  # (B, Cq, Lp)
        self.mask = torch.cat([prefix, suffix], dim=2).unsqueeze(1)  # (B, 1, Cq, Lp + Ck)


def _packed_attention(
    module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs
):
    """Attention of packed completion tokens over [own prompt ; own earlier completion tokens]:
    re-pad to (rows, width) for the attention only (projections and MLP ran on real tokens only)."""
    import torch

    from grpo_repro.sampler.attention import carried

    st = carried(attention_mask, PackedState)
    if st is None:
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    layer = st.cache.layers[module.layer_idx]
    b, w = st.n_rows, st.width
    hq = query.shape[1]

    def pad(x):  # (1, h, N, d) -> (B, h, W, d)
        h = x.shape[1]
        out = x.new_zeros((b, w, h, x.shape[-1]))
        out = out.index_put((st.rows, st.cols), x[0].transpose(0, 1))
        return out.transpose(1, 2)

    k = torch.cat([layer.keys[st.inverse], pad(key)], dim=2)
    v = torch.cat([layer.values[st.inverse], pad(value)], dim=2)
    if k.shape[1] != hq:
        k = k.repeat_interleave(hq // k.shape[1], dim=1)
        v = v.repeat_interleave(hq // v.shape[1], dim=1)
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    # explicit softmax(q k^T) v: faster than CPU flash attention at these tiny shapes
    scores = torch.matmul(pad(query), k.transpose(-1, -2)).mul_(scale)
    scores = scores.masked_fill_(~st.mask, float("-inf"))
    out = torch.matmul(torch.softmax(scores, dim=-1), v)  # (B, hq, W, d)
    return out.transpose(1, 2)[st.rows, st.cols].unsqueeze(0), None


def _register_packed_attention():
    from transformers import AttentionInterface

    AttentionInterface.register(PACKED_ATTN, _packed_attention)


def shared_prefix_logps(
    model,
    input_ids,
    attention_mask,
    logits_to_keep,
    temperature=1.0,
    compute_entropy=False,
    autocast=None,
):
    """Per-token log-probs (and entropies) of the last `logits_to_keep` tokens of each row, as TRL's
    fused-LM-head forward returns them (0 at masked positions), computing each distinct prompt once.

    Rows: [left-padded prompt (width P) ; right-padded completion (width C)]. Returns (logps, entropy)
    of shape (B, C), or None when the layout does not fit (the caller falls back to TRL's path)."""
    import contextlib

    import torch
    from transformers import DynamicCache

    from grpo_repro.sampler.attention import carrying

    b, total = input_ids.shape
    c = int(logits_to_keep)
    p = total - c
    if c < 1 or p < 1:
        return None
    pmask, cmask = attention_mask[:, :p], attention_mask[:, p:]
    if not bool(pmask[:, -1].all()):  # prompts must be left padded (TRL pads them left)
        return None
    lengths = cmask.sum(1)
    if not bool((cmask == (torch.arange(c, device=cmask.device) < lengths[:, None])).all()):
        return None  # completions must be right padded
    prompts = input_ids[:, :p].masked_fill(pmask == 0, -1)
    uniq, inverse = torch.unique(prompts, dim=0, return_inverse=True)
    # drop leading columns that are padding in every distinct prompt; keep TRL's absolute positions
    u_mask = (uniq >= 0).long()
    first = int(u_mask.any(0).nonzero()[0])
    u_ids = uniq[:, first:].clamp(min=0)
    u_mask = u_mask[:, first:]
    c_used = int(lengths.max())
    out_logps = torch.zeros((b, c), dtype=torch.float32, device=input_ids.device)
    out_ent = (
        torch.zeros((b, c), dtype=torch.float32, device=input_ids.device)
        if compute_entropy
        else None
    )
    if c_used == 0:
        return out_logps, out_ent
    body = model.get_decoder() if hasattr(model, "get_decoder") else model.model
    lm_head = model.get_output_embeddings()
    ctx = autocast if autocast is not None else contextlib.nullcontext()
    dev = input_ids.device
    with ctx:
        cache = DynamicCache(config=model.config)
        h_prompt = body(
            input_ids=u_ids,
            attention_mask=u_mask,
            position_ids=torch.arange(first, p, device=dev)[None],
            cache=cache,
            use_cache=True,
        ).last_hidden_state  # (U, P', H)
        last = h_prompt[:, -1][inverse]  # prediction of completion token 0, per row
        hidden = last.unsqueeze(1)
        if c_used > 1:
            is_input = torch.arange(c_used - 1, device=dev) < (
                lengths[:, None] - 1
            )  # token t feeds t+1
            rows, cols = is_input.nonzero(as_tuple=True)
            if len(rows):
                state = PackedState(cache, inverse, u_mask, rows, cols, b, c_used - 1)
                _register_packed_attention()
                old_attn = model.config._attn_implementation
                model.set_attn_implementation(PACKED_ATTN)
                try:
                    with carrying(state):  # Llama rebuilds the mask: the state travels beside it
                        h_tok = body(
                            input_ids=input_ids[:, p:][rows, cols][None],
                            attention_mask={"full_attention": state},
                            position_ids=(p + cols)[None],
                            use_cache=False,
                        ).last_hidden_state[0]  # (N, H)
                finally:
                    model.set_attn_implementation(old_attn)
                h_comp = h_tok.new_zeros((b, c_used - 1, h_tok.shape[-1])).index_put(
                    (rows, cols), h_tok
                )
                hidden = torch.cat([hidden, h_comp], dim=1)
        del cache
        valid = cmask[:, :c_used].bool()
        targets = input_ids[:, p : p + c_used][valid]
        # the LM head on the completion positions only (TRL scores every position on CPU)
        lp, ent = score_tokens(lm_head, hidden[valid], targets, temperature, compute_entropy)
    full_valid = torch.zeros((b, c), dtype=torch.bool, device=dev)
    full_valid[:, :c_used] = valid
    out_logps = out_logps.to(lp.dtype).masked_scatter(full_valid, lp)
    if compute_entropy:
        out_ent = out_ent.to(ent.dtype).masked_scatter(full_valid, ent)
    return out_logps, out_ent


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
