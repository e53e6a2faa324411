"""Batched sampling of many completions per prompt from a transformers causal LM (evaluation, Sec. 6:
50 samples per question).

`HFSampler` (CPU or GPU): many prompts per batch, left padded (attention mask + explicit position
ids = cumsum of the mask, so padding changes nothing), KV-cached, temperature / top-k / top-p (same
order and semantics as transformers' logits warpers), max_new_tokens, EOS (every id of
generation_config.eos_token_id and the tokenizer's). Two cache strategies:

* cache="shared" (default when the model supports it: full-attention layers dispatched through
  transformers' AttentionInterface, e.g. Qwen2/2.5/3, Llama, Mistral): each prompt is prefilled
  ONCE and its keys/values are kept once (not copied per sample); a registered attention function
  attends to [prompt prefix ; generated suffix] in two parts merged by log-sum-exp (cascade /
  shared-prefix attention). Decoding runs on a prefix tree: samples of a prompt whose generated
  tokens are so far identical have identical next-token distributions, so the forward pass runs
  once per distinct (prompt, generated prefix) node and every sample draws its own token from its
  node's distribution with its own uniform. This is exact (the same distribution as decoding each
  sample separately) and, for a trained policy whose samples agree on most tokens, several times
  cheaper. Finished samples leave at once; a node lives while one of its samples does.
* cache="expand" (any transformers causal LM): after the prefill the prompt cache is repeated n
  times along the batch (`DynamicCache.batch_repeat_interleave`), new keys/values go into a
  preallocated buffer, and finished rows are dropped (`batch_select_indices`) whenever a fraction
  `compact_fraction` of the live batch has finished.

Randomness: each prompt owns a torch.Generator seeded with its own seed (callers derive it with
`derive_seed(seed, "eval", variant, step, split, prompt_id)`), which draws the uniforms of all its
samples and positions up front: u[t, s] for position t of sample s. Token t of sample s is the
inverse-CDF draw of u[t, s] under the (filtered) next-token distribution. A prompt's samples thus
depend on its seed only, not on which prompts share its batch, the batch size, the cache strategy
or when finished rows are dropped (up to floating-point differences of differently shaped
matmuls), and a rerun with the same seeds and batches reproduces them bit for bit.

`VLLMSampler`: the same interface on vLLM (GPU), import-guarded.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import time
from dataclasses import asdict, dataclass, field

import numpy as np


def derive_seed(*parts) -> int:
    """A 63-bit seed from any JSON-serialisable parts, e.g. derive_seed(0, "grpo", 60, "test", "test_00001").

    sha256 of the JSON list of the parts: stable across processes and Python versions (unlike hash())."""
    blob = json.dumps(list(parts), sort_keys=True, default=str, separators=(",", ":")).encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:8], "big") & (2**63 - 1)


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 1.0  # 0 = greedy
    top_p: float = 1.0  # nucleus threshold, 1 = off
    top_k: int = 0  # 0 = off
    max_new_tokens: int = 24

    def __post_init__(self):
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0 or self.max_new_tokens < 1:
            raise ValueError("need top_k >= 0 and max_new_tokens >= 1")

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class SampleOutput:
    """Completions of P prompts x n samples: texts[p][s], lengths[p, s] (generated tokens, EOS
    included), finished[p, s] (EOS emitted before max_new_tokens ran out), tokens[p, s, :] (ids,
    padded with the pad id after the length; None for backends that do not return them)."""

    texts: list[list[str]]
    lengths: np.ndarray
    finished: np.ndarray
    stats: dict = field(default_factory=dict)
    tokens: np.ndarray | None = None

    @property
    def n_tokens(self) -> int:
        return int(self.lengths.sum())


def token_cdf(logits, params: SamplingParams):
    """(cdf, index) of the next-token distribution of each row of `logits` (rows, V) after
    temperature, top-k and top-p (transformers' order); cdf is unnormalised, over the vocabulary
    (index None) or over the tokens sorted by probability (index: their ids) when top_p < 1."""
    import torch

    x = logits.float()
    if params.temperature != 1.0:
        x = x / params.temperature
    vocab = x.shape[-1]
    if 0 < params.top_k < vocab:
        kth = torch.topk(x, params.top_k, dim=-1).values[:, -1:]
        x = x.masked_fill(x < kth, float("-inf"))
    probs = torch.softmax(x, dim=-1)
    index = None
    if params.top_p < 1.0:
        probs, index = probs.sort(dim=-1, descending=True)
        before = probs.cumsum(-1) - probs  # mass of the strictly more likely tokens
        probs = probs.masked_fill(before >= params.top_p, 0.0)  # smallest set with mass >= top_p
    return probs.cumsum(-1), index


def draw_tokens(logits, u, params: SamplingParams, row_of=None):
    """One token per sample by inverse CDF: sample i uses row `row_of[i]` of `logits` (identity when
    None) and uniform u[i]. Greedy (argmax) when temperature == 0."""
    import torch

    if params.temperature == 0:
        best = logits.argmax(-1)
        return best if row_of is None else best[row_of]
    cdf, index = token_cdf(logits, params)
    if row_of is not None:
        cdf = cdf[row_of]
        index = None if index is None else index[row_of]
    total = cdf[:, -1:]
    target = (u.to(cdf.dtype).unsqueeze(1) * total).minimum(total * (1 - 2.0**-22))
    pick = torch.searchsorted(cdf, target, right=True).clamp_(max=cdf.shape[-1] - 1)
    if index is not None:
        pick = index.gather(1, pick)
    return pick.squeeze(1)


def sample_from_logits(logits, u, params: SamplingParams):
    """One token per row of `logits` (rows, V) from the uniforms `u` (rows,)."""
    return draw_tokens(logits, u, params)


def _eos_ids(model, tokenizer) -> list[int]:
    ids = set()
    gen = getattr(model, "generation_config", None)
    for src in (getattr(gen, "eos_token_id", None), getattr(model.config, "eos_token_id", None),
                tokenizer.eos_token_id):
        if src is None:
            continue
        ids.update([src] if isinstance(src, int) else list(src))
    if not ids:
        raise ValueError("the model and tokenizer define no eos_token_id; sampling would never stop")
    return sorted(ids)


# --------------------------------------------------------------------------------------------------
# KV caches. Both are DynamicCache objects whose full-attention layers are replaced.
#
# "expand" (any transformers causal LM): after the prefill the prompt cache is repeated n times
#   along the batch (batch_repeat_interleave); new keys/values go into a preallocated buffer
#   (capacity = prompt + max_new_tokens) instead of torch.cat-ing the whole cache at every step.
# "shared" (models whose attention goes through transformers' AttentionInterface, full attention
#   only: Qwen2/2.5/3, Llama, Mistral, ...): the prompt cache is NOT copied per sample. Each layer
#   keeps the prefix (P, H_kv, L_prompt, D) once and a time-major suffix buffer (max_new, nodes,
#   H_kv, D) of the generated tokens of each prefix-tree node; a registered attention function
#   computes softmax attention over [prefix of the node's prompt ; the node's suffix] in two parts
#   merged by log-sum-exp (cascade / shared-prefix attention). Same result as the expanded cache up
#   to float rounding, but the prompt's keys/values are read once per prompt, not once per sample.
# --------------------------------------------------------------------------------------------------

SHARED_ATTN = "grpo_repro_shared_prefix"
_LAYER_CLASSES: dict = {}


def _layer_classes():
    """(PreallocLayer, SharedPrefixLayer), built lazily so importing this module needs no torch."""
    if _LAYER_CLASSES:
        return _LAYER_CLASSES["prealloc"], _LAYER_CLASSES["shared"]
    import torch
    from transformers.cache_utils import DynamicLayer

    class PreallocLayer(DynamicLayer):
        """DynamicLayer writing into a preallocated buffer; keys/values are views of its filled part."""

        def __init__(self, capacity: int):
            super().__init__()
            self.capacity = int(capacity)
            self._k = self._v = None
            self._len = 0

        def _views(self):
            self.keys = self._k[:, :, : self._len]
            self.values = self._v[:, :, : self._len]

        def update(self, key_states, value_states, *args, **kwargs):
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            end = self._len + key_states.shape[-2]
            if self._k is None or end > self._k.shape[2]:
                cap = max(end, self.capacity)
                k = key_states.new_empty(key_states.shape[:2] + (cap, key_states.shape[-1]))
                v = value_states.new_empty(value_states.shape[:2] + (cap, value_states.shape[-1]))
                if self._k is not None:
                    k[:, :, : self._len] = self._k[:, :, : self._len]
                    v[:, :, : self._len] = self._v[:, :, : self._len]
                self._k, self._v = k, v
            self._k[:, :, self._len:end] = key_states
            self._v[:, :, self._len:end] = value_states
            self._len = end
            self._views()
            return self.keys, self.values

        def batch_repeat_interleave(self, repeats: int) -> None:
            if self._len > 0:
                self._k = self._k.repeat_interleave(repeats, dim=0)
                self._v = self._v.repeat_interleave(repeats, dim=0)
                self._views()

        def batch_select_indices(self, indices) -> None:
            if self._len > 0:
                self._k = self._k.index_select(0, indices)
                self._v = self._v.index_select(0, indices)
                self._views()

    class SharedPrefixLayer(DynamicLayer):
        """Prompt keys/values once per prompt, (P, H_kv, L, D), and a time-major suffix buffer
        (max_new_tokens, nodes, H_kv, D) of the generated tokens of each decoding node."""

        def __init__(self, steps: int):
            super().__init__()
            self.steps = int(steps)
            self.prefix_k = self.prefix_v = None
            self.suffix_k = self.suffix_v = None
            self.t = 0

        def update(self, key_states, value_states, *args, **kwargs):
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            if self.prefix_k is None:  # the prefill
                self.prefix_k, self.prefix_v = key_states, value_states
                return key_states, value_states
            if self.suffix_k is None:
                raise RuntimeError("shared-prefix cache: batch_select_indices must follow the prefill")
            end = self.t + key_states.shape[-2]
            self.suffix_k[self.t:end] = key_states.permute(2, 0, 1, 3)
            self.suffix_v[self.t:end] = value_states.permute(2, 0, 1, 3)
            self.t = end
            return self.suffix_k[:end], self.suffix_v[:end]

        def batch_select_indices(self, indices) -> None:
            """New node i continues old node indices[i] (repeated indices fork a node); right
            after the prefill the old nodes are the prompts."""
            _, h, _, d = self.prefix_k.shape
            k = self.prefix_k.new_empty((self.steps, len(indices), h, d))
            v = self.prefix_v.new_empty((self.steps, len(indices), h, self.prefix_v.shape[-1]))
            if self.t > 0:
                torch.index_select(self.suffix_k[: self.t], 1, indices, out=k[: self.t])
                torch.index_select(self.suffix_v[: self.t], 1, indices, out=v[: self.t])
            self.suffix_k, self.suffix_v = k, v

        def batch_repeat_interleave(self, repeats: int) -> None:
            n_old = self.prefix_k.shape[0] if self.suffix_k is None else self.suffix_k.shape[1]
            self.batch_select_indices(
                torch.arange(n_old, device=self.prefix_k.device).repeat_interleave(repeats))

        def get_seq_length(self) -> int:
            return 0 if self.prefix_k is None else self.prefix_k.shape[-2] + self.t

        def get_mask_sizes(self, query_length: int):
            return self.get_seq_length() + query_length, 0

    _LAYER_CLASSES.update(prealloc=PreallocLayer, shared=SharedPrefixLayer)
    return PreallocLayer, SharedPrefixLayer


def make_cache(model, capacity: int, shared_steps: int | None = None):
    """A DynamicCache for `model` whose full-attention layers are PreallocLayer(capacity), or
    SharedPrefixLayer(shared_steps) when `shared_steps` is given (other layer types are kept)."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    prealloc, shared = _layer_classes()
    cache = DynamicCache(config=model.config)
    make = (lambda: shared(shared_steps)) if shared_steps is not None else (lambda: prealloc(capacity))
    cache.layers = [make() if type(layer) is DynamicLayer else layer for layer in cache.layers]
    return cache


class _SharedState:
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
            ~valid[:, None, None, :], float("-inf"))
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


def _shared_prefix_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0,
                             **kwargs):
    """Attention over [prompt prefix ; generated suffix] without the prefix copied per sample.
    Output (batch, q_len, heads, head_dim), like transformers' sdpa_attention_forward."""
    import torch
    import torch.nn.functional as F

    state = attention_mask
    if not isinstance(state, _SharedState):
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, **kwargs)
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    rows, h_q, q_len, d = query.shape
    h_kv = key.shape[2] if state.decoding else key.shape[1]  # decode: time-major suffix
    g = h_q // h_kv
    if not state.decoding:  # prefill: causal + padding mask over the prompt
        if g > 1:
            key, value = key.repeat_interleave(g, dim=1), value.repeat_interleave(g, dim=1)
        out = F.scaled_dot_product_attention(query, key, value, attn_mask=state.prefill_mask, scale=scale)
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


def _register_shared_attention() -> None:
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
    except Exception:  # noqa: BLE001 - any doubt: use the generic path
        return False


class HFSampler:
    """Batched, KV-cached, prefill-sharing sampler for a transformers causal LM (see module doc).

    cache="auto" uses "shared" when `supports_shared_prefix(model)`, else "expand"."""

    backend = "hf"

    def __init__(self, model, tokenizer, batch_prompts: int = 32, compact_fraction: float = 0.25,
                 cache: str = "auto", device=None):
        if cache not in ("auto", "shared", "expand"):
            raise ValueError(f"cache must be auto, shared or expand, got {cache!r}")
        if tokenizer.pad_token_id is None:
            raise ValueError("tokenizer has no pad token; set tokenizer.pad_token = tokenizer.eos_token")
        tokenizer.padding_side = "left"
        self.model = model
        self.tokenizer = tokenizer
        self.batch_prompts = int(batch_prompts)
        self.compact_fraction = float(compact_fraction)
        self.device = device if device is not None else next(model.parameters()).device
        self.eos_ids = _eos_ids(model, tokenizer)
        self.pad_id = tokenizer.pad_token_id
        self.cache_mode = ("shared" if supports_shared_prefix(model) else "expand") if cache == "auto" else cache
        # transformers >= 5.2x names the cache argument `cache` (`past_key_values` is deprecated)
        params = inspect.signature(model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"
        self._layer_types = sorted(set(getattr(model.config, "layer_types", None) or ["full_attention"]))

    def sample(self, prompts: list[str], n: int, params: SamplingParams, seeds: list[int],
               progress=None) -> SampleOutput:
        """n completions of every prompt; prompts are processed `batch_prompts` at a time, in order.

        `seeds[i]` seeds prompt i's generator. `progress(k)` is called with the number of samples
        completed after each batch. stats: forward passes, rows decoded (row_steps) and rows
        actually computed (forward_rows; fewer with the prefix tree)."""
        if len(seeds) != len(prompts):
            raise ValueError(f"{len(prompts)} prompts but {len(seeds)} seeds")
        texts, lengths, finished, tokens = [], [], [], []
        stats = {"cache": self.cache_mode, "forward_calls": 0, "row_steps": 0, "forward_rows": 0,
                 "compactions": 0}
        t0 = time.perf_counter()
        old_attn = getattr(self.model.config, "_attn_implementation", None)
        if self.cache_mode == "shared":
            _register_shared_attention()
            self.model.set_attn_implementation(SHARED_ATTN)
        try:
            for start in range(0, len(prompts), self.batch_prompts):
                sl = slice(start, start + self.batch_prompts)
                run = self._batch_shared if self.cache_mode == "shared" else self._batch_expand
                out = run(prompts[sl], n, params, seeds[sl], stats)
                texts.extend(out.texts)
                lengths.append(out.lengths)
                finished.append(out.finished)
                tokens.append(out.tokens)
                if progress is not None:
                    progress(len(out.texts) * n)
        finally:
            if self.cache_mode == "shared":
                self.model.set_attn_implementation(old_attn)
        stats["seconds"] = time.perf_counter() - t0
        if not lengths:
            return SampleOutput([], np.zeros((0, n), int), np.zeros((0, n), bool), stats,
                                np.zeros((0, n, params.max_new_tokens), int))
        return SampleOutput(texts, np.concatenate(lengths), np.concatenate(finished), stats,
                            np.concatenate(tokens))

    # -------------------------------------------------------------------------------- helpers

    def _uniforms(self, seeds, n, steps):
        """(steps, P * n) uniforms; column p * n + s belongs to sample s of prompt p."""
        import torch

        per_prompt = []
        for seed in seeds:
            g = torch.Generator(device="cpu")
            g.manual_seed(int(seed))
            per_prompt.append(torch.rand((steps, n), generator=g))
        return torch.cat(per_prompt, dim=1).to(self.device)

    def _forward(self, ids, mask, pos, cache, **kw):
        return self.model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True,
                          **{self._cache_kw: cache}, **kw)

    def _encode(self, prompts):
        enc = self.tokenizer(prompts, return_tensors="pt", padding=True)
        ids = enc["input_ids"].to(self.device)
        mask = enc["attention_mask"].to(self.device)
        pos = (mask.long().cumsum(-1) - 1).clamp_(min=0)
        return ids, mask, pos

    def _finish(self, out_tokens, lengths, done, n_prompts, n) -> SampleOutput:
        lengths_np = lengths.cpu().numpy()
        tokens_np = out_tokens.cpu().numpy()
        completions = self.tokenizer.batch_decode(
            [tokens_np[r, : lengths_np[r]].tolist() for r in range(len(lengths_np))],
            skip_special_tokens=True)
        texts = [completions[p * n:(p + 1) * n] for p in range(n_prompts)]
        return SampleOutput(texts, lengths_np.reshape(n_prompts, n), done.cpu().numpy().reshape(n_prompts, n),
                            tokens=tokens_np.reshape(n_prompts, n, -1))

    def _outputs(self, rows_total, steps):
        import torch

        dev = self.device
        return (torch.full((rows_total, steps), self.pad_id, dtype=torch.long, device=dev),
                torch.full((rows_total,), steps, dtype=torch.long, device=dev),
                torch.zeros(rows_total, dtype=torch.bool, device=dev))

    # -------------------------------------------------------------------------------- shared

    def _batch_shared(self, prompts, n, params: SamplingParams, seeds, stats) -> SampleOutput:
        """Prefix-tree decoding on the shared-prefix cache (see the module doc)."""
        import torch

        dev, steps = self.device, params.max_new_tokens
        n_prompts, rows_total = len(prompts), len(prompts) * n
        ids, mask, pos = self._encode(prompts)
        uniforms = self._uniforms(seeds, n, steps)
        eos = torch.tensor(self.eos_ids, device=dev)
        out_tokens, lengths, done = self._outputs(rows_total, steps)
        with torch.inference_mode():
            cache = make_cache(self.model, 0, shared_steps=steps)
            state = _SharedState(cache, mask)
            masks = {lt: state for lt in self._layer_types}
            res = self._forward(ids, masks, pos, cache, logits_to_keep=1)
            stats["forward_calls"] += 1
            logits = res.logits[:, -1, :]  # one row per node; the first nodes are the prompts
            vocab = logits.shape[-1]
            first_pos = pos[:, -1] + 1  # position of generated token 0 of each prompt
            node_prompt = torch.arange(n_prompts, device=dev)
            n_nodes = n_prompts
            rows = torch.arange(rows_total, device=dev)  # global index p * n + s of live samples
            row_node = rows // n
            for t in range(steps):
                same = len(rows) == n_nodes and bool((row_node == torch.arange(n_nodes, device=dev)).all())
                tok = draw_tokens(logits, uniforms[t, rows], params, row_of=None if same else row_node)
                out_tokens[rows, t] = tok
                fin = torch.isin(tok, eos)
                if bool(fin.any()):
                    lengths[rows[fin]] = t + 1
                    done[rows[fin]] = True
                    keep = ~fin
                    rows, tok, row_node = rows[keep], tok[keep], row_node[keep]
                if t == steps - 1 or len(rows) == 0:
                    break
                # children: distinct (node, token) pairs, sorted (so grouped by prompt)
                key = row_node * vocab + tok
                uniq, inv = torch.unique(key, sorted=True, return_inverse=True)
                parent, child_tok = uniq // vocab, uniq % vocab
                forks = bool((parent[1:] == parent[:-1]).any()) if len(parent) > 1 else False
                dead = n_nodes - len(parent)
                if t == 0 or forks or dead >= max(1, self.compact_fraction * n_nodes):
                    # fork / compact the tree: node i of the next step continues old node parent[i]
                    cache.batch_select_indices(parent)
                    node_prompt = node_prompt[parent]
                    n_nodes = len(parent)
                    state.set_rows(node_prompt)
                    node_tok, row_node = child_tok, inv
                    stats["compactions"] += 1
                else:  # every node has at most one child: keep the layout, idle nodes feed a pad
                    node_tok = torch.full((n_nodes,), self.pad_id, dtype=torch.long, device=dev)
                    node_tok[parent] = child_tok
                    row_node = parent[inv]
                res = self._forward(node_tok.unsqueeze(1), masks, (first_pos[node_prompt] + t).unsqueeze(1), cache)
                logits = res.logits[:, -1, :]
                stats["forward_calls"] += 1
                stats["forward_rows"] += n_nodes
                stats["row_steps"] += len(rows)
        del cache, res, state, masks
        return self._finish(out_tokens, lengths, done, n_prompts, n)

    # -------------------------------------------------------------------------------- expand

    def _batch_expand(self, prompts, n, params: SamplingParams, seeds, stats) -> SampleOutput:
        """Generic path: prompt cache repeated per sample, finished rows dropped periodically."""
        import torch

        dev, steps = self.device, params.max_new_tokens
        n_prompts, rows_total = len(prompts), len(prompts) * n
        ids, mask, pos = self._encode(prompts)
        uniforms = self._uniforms(seeds, n, steps)
        eos = torch.tensor(self.eos_ids, device=dev)
        out_tokens, lengths, done = self._outputs(rows_total, steps)
        with torch.inference_mode():
            cache = make_cache(self.model, ids.shape[1] + steps)
            res = self._forward(ids, mask, pos, cache, logits_to_keep=1)
            stats["forward_calls"] += 1
            cache.batch_repeat_interleave(n)  # the n samples of a prompt share its prefill
            logits = res.logits[:, -1, :].repeat_interleave(n, dim=0)
            mask = mask.repeat_interleave(n, dim=0)
            next_pos = pos[:, -1].repeat_interleave(n, dim=0) + 1
            rows = torch.arange(rows_total, device=dev)  # global row of each live batch row
            alive = torch.ones(rows_total, dtype=torch.bool, device=dev)
            for t in range(steps):
                tok = draw_tokens(logits, uniforms[t, rows], params)
                out_tokens[rows[alive], t] = tok[alive]
                fin = alive & torch.isin(tok, eos)
                lengths[rows[fin]] = t + 1
                done[rows[fin]] = True
                alive &= ~fin
                n_alive = int(alive.sum())
                if t == steps - 1 or n_alive == 0:
                    break
                if len(rows) - n_alive >= max(1, self.compact_fraction * len(rows)):
                    keep = alive.nonzero().squeeze(1)
                    cache.batch_select_indices(keep)
                    mask, next_pos, rows, tok, alive = mask[keep], next_pos[keep], rows[keep], tok[keep], alive[keep]
                    stats["compactions"] += 1
                mask = torch.cat([mask, mask.new_ones((len(rows), 1))], dim=1)
                res = self._forward(tok.unsqueeze(1), mask, next_pos.unsqueeze(1), cache)
                stats["forward_calls"] += 1
                stats["forward_rows"] += len(rows)
                stats["row_steps"] += n_alive
                logits = res.logits[:, -1, :]
                next_pos = next_pos + 1
        del cache, res
        return self._finish(out_tokens, lengths, done, n_prompts, n)


class VLLMSampler:
    """The same interface on vLLM (GPU). Prompts go in as token ids of *our* tokenizer
    (skip_tokenizer_init) and completions are decoded with it, so word-level organism tokenizers
    work too; each prompt's request carries its own seed."""

    backend = "vllm"

    def __init__(self, model_path: str, tokenizer, dtype: str = "auto", gpu_memory_utilization: float = 0.5,
                 eos_ids=None, batch_prompts: int = 32):
        try:
            from vllm import LLM
        except ImportError as err:
            raise ImportError(
                "eval.backend=vllm needs vLLM on a CUDA machine: `pip install vllm` "
                "(envs/gpu.txt), or set eval.backend: hf to use the batched transformers sampler"
            ) from err
        self.tokenizer = tokenizer
        self.batch_prompts = int(batch_prompts)  # prompts per resumable chunk (vLLM batches itself)
        self.eos_ids = sorted(set(eos_ids or [tokenizer.eos_token_id]))
        self.llm = LLM(model=str(model_path), dtype=dtype, skip_tokenizer_init=True,
                       gpu_memory_utilization=gpu_memory_utilization, trust_remote_code=False)

    def sample(self, prompts, n, params: SamplingParams, seeds, progress=None) -> SampleOutput:
        from vllm import SamplingParams as VParams

        t0 = time.perf_counter()
        ids = self.tokenizer(prompts, padding=False)["input_ids"]
        requests = [{"prompt_token_ids": x} for x in ids]
        sp = [VParams(n=n, temperature=params.temperature, top_p=params.top_p,
                      top_k=params.top_k if params.top_k > 0 else -1, max_tokens=params.max_new_tokens,
                      seed=int(s) % (2**31), stop_token_ids=self.eos_ids, detokenize=False)
              for s in seeds]
        results = self.llm.generate(requests, sp, use_tqdm=False)
        texts, lengths, finished = [], [], []
        for res in results:
            outs = res.outputs
            toks = [list(o.token_ids) for o in outs]  # the stop token, when emitted, is the last one
            texts.append(self.tokenizer.batch_decode(toks, skip_special_tokens=True))
            lengths.append([len(t) for t in toks])
            finished.append([o.finish_reason == "stop" for o in outs])
        if progress is not None:
            progress(len(prompts) * n)
        return SampleOutput(texts, np.array(lengths).reshape(len(prompts), n),
                            np.array(finished).reshape(len(prompts), n),
                            {"seconds": time.perf_counter() - t0})


def make_sampler(backend: str, model, tokenizer, model_path=None, batch_prompts: int = 32, **kw):
    """The sampler of config key eval.backend: hf (HFSampler) or vllm (VLLMSampler)."""
    if backend == "hf":
        return HFSampler(model, tokenizer, batch_prompts=batch_prompts, **kw)
    if backend == "vllm":
        if model_path is None:
            raise ValueError("eval.backend=vllm needs the model directory")
        return VLLMSampler(model_path, tokenizer, eos_ids=_eos_ids(model, tokenizer), batch_prompts=batch_prompts,
                           **kw)
    raise ValueError(f"unknown eval.backend {backend!r}; expected hf or vllm")
