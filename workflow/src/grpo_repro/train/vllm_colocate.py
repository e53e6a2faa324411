"""TRL's colocated vLLM engine (train.use_vllm with train.vllm_mode colocate: a vLLM engine inside each
training process) with the project's engine settings, on a GPU or on vLLM's CPU backend
(vllm.platform).

Two things TRL 1.16 does not do, and offers no seam for (GRPOConfig has no field for the engine's
dtype or other engine arguments; VLLMGeneration._init_vllm builds `LLM(...)` from fixed arguments):

* the engine's dtype: TRL leaves it at vLLM's "auto", which samples a float32 checkpoint in 16-bit
  weights; here it is the rollout dtype (grpo_repro.models.rollout_dtype), the one the server mode
  and evaluation's eval.dtype rollout use, plus the platform's engine options
  (grpo_repro.sampler.vllm.engine_options);
* the weight sync on a CPU: vLLM's CPU backend repacks every linear layer's weight after loading,
  so TRL's per-parameter `model.load_weights` fails there ("'Parameter' object has no attribute
  'weight_loader'"). `sync_weights_cpu` loads through vLLM's own in-place reload
  (the model runner's reload_weights, which repacks again) and then repacks the tied output head,
  which the reload skips: without that the engine keeps sampling from pi_ref's head (log-probs off by
  up to 15 nats after a few steps).

`colocated_engine` applies both for the construction of one trainer only: it gives TRL's
generation module an `LLM` that adds the arguments, and the trainer module a VLLMGeneration whose
sync is the CPU one on a CPU; both names are restored when the trainer is built.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator


def engine_arguments(train: dict, platform: str) -> dict:
    """The LLM(...) arguments the project adds to TRL's colocated engine: the rollout dtype and the
    platform's engine options (module docstring)."""
    from grpo_repro.models import rollout_dtype
    from grpo_repro.sampler.vllm import engine_options

    return {"dtype": rollout_dtype(train), **engine_options(platform)}


def tied_head(model):
    """The output head of a vLLM model that shares the input embedding's weight, else None."""
    tied = getattr(getattr(model, "config", None), "tie_word_embeddings", False)
    return getattr(model, "lm_head", None) if tied else None


def sync_weights_cpu(generation) -> None:
    """TRL's VLLMGeneration.sync_weights for vLLM's CPU backend (module docstring): the policy's
    parameters through the model runner's reload_weights (checkpoint format: vLLM renames, shards
    and repacks them), the tied head repacked from the new embedding, the prefix cache reset."""
    from vllm.model_executor.model_loader.utils import process_weights_after_loading

    runner = generation.llm.llm_engine.model_executor.driver_worker.model_runner
    runner.reload_weights(weights_iterator=generation._iter_named_params())
    model = runner.get_model()
    head = tied_head(model)
    if head is not None:  # re-run the head's post-load step: its packed copy is pi_ref's
        process_weights_after_loading(head, runner.model_config, head.weight.device)
    generation.llm.reset_prefix_cache()


def context_length(model: str) -> int:
    """The context length of a checkpoint (its config's max_position_embeddings)."""
    from transformers import AutoConfig

    return int(AutoConfig.from_pretrained(model).max_position_embeddings)


def _build_llm(llm_class, extra: dict, bounded: bool, **trl_kwargs):
    """TRL's LLM(...) call with `extra` (engine_arguments). bounded (the CPU backend, no chunked
    prefill): the context is cut to TRL's max_num_batched_tokens (4096), which vLLM refuses below
    the context when prompts are not chunked; a prompt and its completion stay far below it."""
    kwargs = {**trl_kwargs, **extra}
    if bounded and kwargs.get("max_model_len") is None and "max_num_batched_tokens" in kwargs:
        limit = int(kwargs["max_num_batched_tokens"])
        kwargs["max_model_len"] = min(limit, context_length(kwargs["model"]))
    return llm_class(**kwargs)


@functools.cache
def _cpu_generation_class():
    from trl.generation.vllm_generation import VLLMGeneration

    class CPUVLLMGeneration(VLLMGeneration):
        """TRL's generation backend with the CPU weight sync (sync_weights_cpu) in colocate
        mode."""

        def sync_weights(self):
            if self.mode != "colocate":
                return super().sync_weights()
            return sync_weights_cpu(self)

    return CPUVLLMGeneration


@contextlib.contextmanager
def _swapped(module, name: str, value) -> Iterator[None]:
    old = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        setattr(module, name, old)


@contextlib.contextmanager
def colocated_engine(train: dict, platform: str) -> Iterator[None]:
    """For the body (building one trainer): TRL's colocated engine built with engine_arguments and,
    on vllm.platform cpu, synced by sync_weights_cpu (module docstring). Nothing changes when the
    run does not generate with a colocated engine."""
    if not (train.get("use_vllm") and train.get("vllm_mode") == "colocate"):
        yield
        return
    import trl.generation.vllm_generation as generation
    import trl.trainer.grpo_trainer as grpo_trainer

    llm = functools.partial(
        _build_llm, generation.LLM, engine_arguments(train, platform), platform == "cpu"
    )
    with contextlib.ExitStack() as stack:
        stack.enter_context(_swapped(generation, "LLM", llm))
        if platform == "cpu":
            stack.enter_context(_swapped(grpo_trainer, "VLLMGeneration", _cpu_generation_class()))
        yield
