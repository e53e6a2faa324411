"""The organism's policy: a small transformers Qwen2 causal LM (about 1.2M parameters by default)."""

from __future__ import annotations

from transformers import Qwen2Config, Qwen2ForCausalLM


def build_model(vocab_size: int, hidden: int, layers: int, heads: int, ffn: int,
                pad_id: int, bos_id: int, eos_id: int, max_len: int = 256, seed: int = 0):
    import torch

    torch.manual_seed(seed)
    cfg = Qwen2Config(
        vocab_size=vocab_size, hidden_size=hidden, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=heads, intermediate_size=ffn,
        max_position_embeddings=max_len, tie_word_embeddings=True,
        pad_token_id=pad_id, bos_token_id=bos_id, eos_token_id=eos_id,
    )
    return Qwen2ForCausalLM(cfg)
