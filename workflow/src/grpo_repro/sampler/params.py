"""Sampling parameters, sampler outputs and the inverse-CDF token draw shared by every sampler
(temperature, top-k, top-p in transformers' order; one uniform per sample and position)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np


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


def eos_ids(model, tokenizer) -> list[int]:
    ids = set()
    gen = getattr(model, "generation_config", None)
    for src in (
        getattr(gen, "eos_token_id", None),
        getattr(model.config, "eos_token_id", None),
        tokenizer.eos_token_id,
    ):
        if src is None:
            continue
        ids.update([src] if isinstance(src, int) else list(src))
    if not ids:
        raise ValueError(
            "the model and tokenizer define no eos_token_id; sampling would never stop"
        )
    return sorted(ids)
