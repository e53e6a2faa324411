"""Tiny causal LMs for the sampler and evaluation tests: a word-level organism tokenizer over a
closed vocabulary of a dozen tokens and a random 2-layer Qwen2 (or Llama with attention biases, the
default organism's architecture), built in memory in milliseconds."""

from __future__ import annotations

MICRO_TEXTS = ["Q 1 + 2 ?\n#### 3", "Q 3 - 1 ?\n#### 2", "Q 0 + 1 ?\n#### 1"]
MICRO_PROMPTS = ["Q 1 ?\n", "Q 2 + 1 ?\n", "Q 1 + 1 - 2 + 3 ?\n", "Q 3 ?\n", "Q 0 + 2 ?\n"]
MICRO_GOLDS = ["1", "3", "3", "3", "2"]


def micro_policy(
    sharpness: float = 4.0,
    seed: int = 0,
    heads: int = 2,
    kv_heads: int | None = None,
    init_std: float = 0.3,
    arch: str = "qwen2",
):
    """(model, tokenizer): vocabulary of ~14 tokens; weight matrices drawn with std `init_std` (large:
    attention is sharp, so positions and cached keys matter) and output embeddings scaled by
    `sharpness` so the next-token distributions are peaked (samples share prefixes, lengths vary)."""
    import torch

    from grpo_repro.data.prepare import build_tokenizer
    from grpo_repro.train.sft import build_model

    torch.set_num_threads(1)
    tok = build_tokenizer(MICRO_TEXTS, max_value=3)
    model = build_model(
        len(tok), 32, 2, heads, 64, tok.pad_token_id, tok.bos_token_id, tok.eos_token_id,
        seed=seed, arch=arch,
    )  # fmt: skip
    if kv_heads is not None:  # grouped-query attention variant
        cfg = type(model.config)(**{**model.config.to_dict(), "num_key_value_heads": kv_heads})
        torch.manual_seed(seed)
        model = type(model)(cfg)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if param.dim() == 2 and "embed" not in name:
                param.copy_(torch.randn(param.shape, generator=gen) * init_std)
        model.get_output_embeddings().weight.mul_(sharpness)
    return model.eval(), tok


def micro_records(n_repeat: int = 1) -> list[dict]:
    out = []
    for r in range(n_repeat):
        for i, (p, g) in enumerate(zip(MICRO_PROMPTS, MICRO_GOLDS)):
            out.append(
                {
                    "prompt_id": f"m_{r}_{i}",
                    "prompt": p,
                    "gold": g,
                    "question": p.strip(),
                    "answer": f"#### {g}",
                }
            )
    return out
