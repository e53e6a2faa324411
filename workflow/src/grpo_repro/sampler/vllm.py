"""VLLMSampler: the HFSampler interface on vLLM (GPU), import-guarded (eval.backend: vllm).
One engine per sampler, started with the evaluation's weights dtype (eval.dtype); `close` shuts it
down and frees its GPU memory, so that a job evaluating several checkpoints has one engine alive at
a time (grpo_repro.evaluate.run.run_eval_job). Tested on CPU against a stand-in engine with vLLM's
interface (tests/helpers/vllm_standin.py, tests/unit/sampler/test_vllm_sampler.py); the real
engine only on a GPU."""

from __future__ import annotations

import gc
import time

import numpy as np

from grpo_repro.sampler.params import SampleOutput, SamplingParams


class VLLMSampler:
    """The same interface on vLLM (GPU). Prompts go in as token ids of *our* tokenizer
    (skip_tokenizer_init) and completions are decoded with it, so word-level organism tokenizers
    work too; each prompt's request carries its own seed."""

    backend = "vllm"

    def __init__(
        self,
        model_path: str,
        tokenizer,
        dtype: str = "float32",
        gpu_memory_utilization: float = 0.5,
        eos_ids=None,
        batch_prompts: int = 32,
    ):
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
        self.llm = LLM(
            model=str(model_path),
            dtype=dtype,
            skip_tokenizer_init=True,
            gpu_memory_utilization=gpu_memory_utilization,
            trust_remote_code=False,
        )

    def close(self) -> None:
        """Shut the engine down (vLLM V1: LLM.llm_engine.engine_core.shutdown(), which ends the
        engine-core process and with it the GPU memory it held) and drop it; idempotent."""
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
