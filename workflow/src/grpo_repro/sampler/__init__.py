"""Batched sampling of many completions per prompt from a transformers causal LM (evaluation, Sec. 6:
50 samples per question).

`HFSampler` (CPU or GPU): many prompts per batch, left padded (attention mask + explicit position
ids = cumsum of the mask, so padding changes nothing), KV-cached, temperature / top-k / top-p (same
order and semantics as transformers' logits warpers), max_new_tokens, EOS (every id of
generation_config.eos_token_id and the tokenizer's). Two cache strategies:

* cache="shared" (default when the model supports it: full-attention layers dispatched through
  transformers' AttentionInterface, e.g. Qwen2/2.5/3, Llama, Mistral): each prompt is prefilled
  ONCE and its keys/values are kept once (not copied per sample); a registered attention function
  attends to [prompt prefix ; generated suffix] in two parts merged by log-sum-exp (cascade /
  shared-prefix attention). Decoding runs on a prefix tree: samples of a prompt whose generated
  tokens are so far identical have identical next-token distributions, so the forward pass runs
  once per distinct (prompt, generated prefix) node and every sample draws its own token from its
  node's distribution with its own uniform. This is exact (the same distribution as decoding each
  sample separately) and, for a trained policy whose samples agree on most tokens, several times
  cheaper. Finished samples leave at once; a node lives while one of its samples does.
* cache="expand" (any transformers causal LM): after the prefill the prompt cache is repeated n
  times along the batch (`DynamicCache.batch_repeat_interleave`), new keys/values go into a
  preallocated buffer, and finished rows are dropped (`batch_select_indices`) whenever a fraction
  `compact_fraction` of the live batch has finished.

Randomness: each prompt owns a torch.Generator seeded with its own seed (callers derive it with
`derive_seed(seed, "eval", variant, step, split, prompt_id)`), which draws the uniforms of all its
samples and positions up front: u[t, s] for position t of sample s. Token t of sample s is the
inverse-CDF draw of u[t, s] under the (filtered) next-token distribution. A prompt's samples thus
depend on its seed only, not on which prompts share its batch, the batch size, the cache strategy
or when finished rows are dropped (up to floating-point differences of differently shaped
matmuls), and a rerun with the same seeds and batches reproduces them bit for bit.

`VLLMSampler`: the same interface on vLLM (GPU), import-guarded.

Modules: `params` (SamplingParams, SampleOutput, inverse-CDF token draws), `cache` (KV cache
layers: preallocated and shared-prefix), `attention` (the shared-prefix attention function),
`hf` (HFSampler), `vllm` (VLLMSampler); the backend of eval.backend is chosen by
grpo_repro.evaluate.job.make_sampler.
"""
