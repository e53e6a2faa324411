"""KV caches of the HF sampler: DynamicCache objects whose full-attention layers are replaced by a
preallocated layer ("expand") or a shared-prefix layer ("shared"); see grpo_repro.sampler."""

from __future__ import annotations

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
            self._k[:, :, self._len : end] = key_states
            self._v[:, :, self._len : end] = value_states
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
                raise RuntimeError(
                    "shared-prefix cache: batch_select_indices must follow the prefill"
                )
            end = self.t + key_states.shape[-2]
            self.suffix_k[self.t : end] = key_states.permute(2, 0, 1, 3)
            self.suffix_v[self.t : end] = value_states.permute(2, 0, 1, 3)
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
                torch.arange(n_old, device=self.prefix_k.device).repeat_interleave(repeats)
            )

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
    make = (
        (lambda: shared(shared_steps)) if shared_steps is not None else (lambda: prealloc(capacity))
    )
    cache.layers = [make() if type(layer) is DynamicLayer else layer for layer in cache.layers]
    return cache
