"""A stand-in for the `vllm` package on CPU (tests of grpo_repro.sampler.vllm.VLLMSampler): the
part of vLLM's offline interface the sampler uses, with vLLM's names and semantics (vllm.LLM,
vllm.SamplingParams, RequestOutput / CompletionOutput of vllm/outputs.py):

* LLM(model, dtype, skip_tokenizer_init, gpu_memory_utilization, trust_remote_code) loads the
  checkpoint directory with transformers; generate(prompts, sampling_params, use_tqdm) takes one
  {"prompt_token_ids": [...]} per request (skip_tokenizer_init: no text prompts) and one
  SamplingParams per request, and returns one RequestOutput per request in request order;
* each request draws from its own generator seeded with its `seed`; a completion stops after a
  token of `stop_token_ids` (kept in token_ids, finish_reason "stop") or after max_tokens
  ("length"); temperature 0 is greedy; top_k -1 and top_p 1 are off.

Every LLM built is kept in `LLM.built` (the tests read the constructor arguments and requests)."""

from __future__ import annotations

import types
from dataclasses import dataclass, field


@dataclass
class SamplingParams:
    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    max_tokens: int | None = 16
    seed: int | None = None
    stop_token_ids: list[int] | None = None
    detokenize: bool = True


@dataclass
class CompletionOutput:
    index: int
    text: str
    token_ids: list[int]
    cumulative_logprob: float | None = None
    logprobs: None = None
    finish_reason: str | None = None


@dataclass
class RequestOutput:
    request_id: str
    prompt: str | None
    prompt_token_ids: list[int]
    outputs: list[CompletionOutput] = field(default_factory=list)
    finished: bool = True


class LLM:
    built: list = []
    reorder = None  # tests: a permutation applied to the returned list (vLLM keeps request order)

    def __init__(
        self,
        model: str,
        dtype: str = "auto",
        skip_tokenizer_init: bool = False,
        gpu_memory_utilization: float = 0.9,
        trust_remote_code: bool = False,
    ):
        from transformers import AutoModelForCausalLM

        self.kwargs = {
            "model": model,
            "dtype": dtype,
            "skip_tokenizer_init": skip_tokenizer_init,
            "gpu_memory_utilization": gpu_memory_utilization,
            "trust_remote_code": trust_remote_code,
        }
        self.model = AutoModelForCausalLM.from_pretrained(model).eval()
        self.requests = []
        LLM.built.append(self)

    def generate(self, prompts, sampling_params, use_tqdm=True):
        if not self.kwargs["skip_tokenizer_init"]:
            raise NotImplementedError("the stand-in only takes token-id prompts")
        if isinstance(sampling_params, SamplingParams):
            sampling_params = [sampling_params] * len(prompts)
        if len(sampling_params) != len(prompts):
            raise ValueError("The lengths of prompts and sampling_params must be the same.")
        self.requests.append((prompts, sampling_params))
        out = [
            RequestOutput(str(i), None, list(p["prompt_token_ids"]), self._complete(p, sp))
            for i, (p, sp) in enumerate(zip(prompts, sampling_params))
        ]
        return [out[i] for i in self.reorder] if self.reorder else out

    def _complete(self, prompt, sp: SamplingParams) -> list[CompletionOutput]:
        import torch

        gen = torch.Generator().manual_seed(int(sp.seed if sp.seed is not None else 0))
        stops = set(sp.stop_token_ids or [])
        outs = []
        for k in range(sp.n):
            ids = list(prompt["prompt_token_ids"])
            toks, reason = [], "length"
            for _ in range(sp.max_tokens):
                with torch.no_grad():
                    logits = self.model(input_ids=torch.tensor([ids + toks])).logits[0, -1].float()
                tok = _draw(logits, sp, gen)
                toks.append(tok)
                if tok in stops:
                    reason = "stop"
                    break
            outs.append(CompletionOutput(k, "", toks, finish_reason=reason))
        return outs


def _draw(logits, sp: SamplingParams, gen) -> int:
    import torch

    if sp.temperature == 0:
        return int(logits.argmax())
    x = logits / sp.temperature
    if sp.top_k > 0:
        x = x.masked_fill(x < torch.topk(x, sp.top_k).values[-1], float("-inf"))
    probs = torch.softmax(x, -1)
    if sp.top_p < 1:
        p_sorted, idx = probs.sort(descending=True)
        drop = (p_sorted.cumsum(0) - p_sorted) >= sp.top_p
        probs = probs.scatter(0, idx, p_sorted.masked_fill(drop, 0.0))
    return int(torch.multinomial(probs, 1, generator=gen))


def module() -> types.ModuleType:
    """A fresh `vllm` module object (install with monkeypatch.setitem(sys.modules, "vllm", ...))."""
    mod = types.ModuleType("vllm")
    LLM.built = []
    LLM.reorder = None
    mod.LLM, mod.SamplingParams = LLM, SamplingParams
    return mod
