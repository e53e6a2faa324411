"""A stand-in for the `vllm` package on CPU (tests of grpo_repro.sampler.vllm.VLLMSampler): the
part of vLLM's offline interface the sampler uses, with vLLM's names and semantics (vllm.LLM,
vllm.SamplingParams, RequestOutput / CompletionOutput of vllm/outputs.py):

* LLM(model, dtype, skip_tokenizer_init, gpu_memory_utilization, trust_remote_code) loads the
  checkpoint directory with transformers; generate(prompts, sampling_params, use_tqdm) takes one
  {"prompt_token_ids": [...]} per request (skip_tokenizer_init: no text prompts) and one
  SamplingParams per request, and returns one RequestOutput per request in request order;
* each request draws from its own generator seeded with its `seed`; a completion stops after a
  token of `stop_token_ids` (kept in token_ids, finish_reason "stop") or after max_tokens
  ("length"); temperature 0 is greedy; top_k -1 and top_p 1 are off;
* `dtype` is the weights' dtype ("float32", "bfloat16", "float16"; "auto" is not mimicked: vLLM
  then reads the checkpoint's torch_dtype and turns float32 into float16);
* `llm.llm_engine.engine_core.shutdown()` shuts the engine down (vLLM V1's LLMEngine.engine_core,
  an EngineCoreClient: its engine-core process ends and the GPU memory it held is freed); a shut
  engine generates nothing;
* with `LLM.spawn` set, constructing an LLM starts a child with
  multiprocessing.get_context("spawn") and waits for it, as vLLM starts its engine core with the
  spawn method once CUDA is initialised in the caller: the child re-imports the caller's main
  module (a script without a main guard runs again), and a child that fails is an error.

Every LLM built is kept in `LLM.built` (the tests read the constructor arguments and requests),
the engines not shut down in `LLM.live`, and the most that were alive at once in `LLM.most_live`."""

from __future__ import annotations

import multiprocessing
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


class EngineCore:
    """The engine-core client of one LLM (vLLM V1: LLMEngine.engine_core)."""

    def __init__(self, llm: LLM):
        self.llm = llm

    def shutdown(self) -> None:
        if self.llm in LLM.live:
            LLM.live.remove(self.llm)
        self.llm.model = None  # the weights are freed


def _engine_core() -> None:
    """The spawned child's work (an engine core that starts and stops)."""


def _start_engine_process() -> None:
    proc = multiprocessing.get_context("spawn").Process(target=_engine_core)
    proc.start()
    proc.join()
    if proc.exitcode != 0:
        raise RuntimeError(
            f"Engine core initialization failed (the spawned engine process exited with "
            f"{proc.exitcode}). See root cause above."
        )


class LLM:
    built: list = []
    live: list = []
    most_live = 0
    spawn = False  # tests: start a spawned child per engine (vLLM's spawn start method)
    reorder = None  # tests: a permutation applied to the returned list (vLLM keeps request order)

    def __init__(
        self,
        model: str,
        dtype: str = "auto",
        skip_tokenizer_init: bool = False,
        gpu_memory_utilization: float = 0.9,
        trust_remote_code: bool = False,
    ):
        import torch
        from transformers import AutoModelForCausalLM

        if dtype == "auto":
            raise NotImplementedError("the stand-in takes an explicit dtype")
        self.kwargs = {
            "model": model,
            "dtype": dtype,
            "skip_tokenizer_init": skip_tokenizer_init,
            "gpu_memory_utilization": gpu_memory_utilization,
            "trust_remote_code": trust_remote_code,
        }
        if LLM.spawn:
            _start_engine_process()
        self.model = AutoModelForCausalLM.from_pretrained(model, dtype=getattr(torch, dtype))
        self.model.eval()
        self.llm_engine = types.SimpleNamespace(engine_core=EngineCore(self))
        self.requests = []
        LLM.built.append(self)
        LLM.live.append(self)
        LLM.most_live = max(LLM.most_live, len(LLM.live))

    def generate(self, prompts, sampling_params, use_tqdm=True):
        if self.model is None:
            raise RuntimeError("EngineCore encountered an issue: the engine was shut down")
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
    LLM.built, LLM.live, LLM.most_live = [], [], 0
    LLM.spawn, LLM.reorder = False, None
    mod.LLM, mod.SamplingParams = LLM, SamplingParams
    return mod


def install(monkeypatch) -> types.ModuleType:
    """A fresh stand-in installed as `vllm` for one test (pytest's monkeypatch undoes it)."""
    import sys

    mod = module()
    monkeypatch.setitem(sys.modules, "vllm", mod)
    return mod
