"""The sampler of config key eval.backend: hf (HFSampler) or vllm (VLLMSampler)."""

from __future__ import annotations

from grpo_repro.sampler.params import eos_ids


def make_sampler(
    backend: str,
    model,
    tokenizer,
    model_path=None,
    batch_prompts: int = 32,
    dtype: str | None = None,
    **kw,
):
    """The sampler of config key eval.backend: hf (HFSampler) or vllm (VLLMSampler). `dtype`: the
    weights' dtype for vLLM's engine (default: `model`'s); the HF sampler samples `model` as loaded.
    vLLM's `kw` include platform (vllm.platform: cuda or cpu)."""
    if backend == "hf":
        from grpo_repro.sampler.hf import HFSampler

        return HFSampler(model, tokenizer, batch_prompts=batch_prompts, **kw)
    if backend == "vllm":
        from grpo_repro.sampler.vllm import VLLMSampler

        if model_path is None:
            raise ValueError("eval.backend=vllm needs the model directory")
        return VLLMSampler(
            model_path,
            tokenizer,
            dtype=dtype or str(model.dtype).removeprefix("torch."),
            eos_ids=eos_ids(model, tokenizer),
            batch_prompts=batch_prompts,
            **kw,
        )
    raise ValueError(f"unknown eval.backend {backend!r}; expected hf or vllm")
