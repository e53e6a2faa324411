"""The fast GRPO training step (config key train.fast_step): the same loss and the same sampling
distribution as TRL 1.16, about 3x faster per optimizer step on CPU (workflow/benchmarks/bench_train.py).

FastGRPOTrainer subclasses the project's PaperGRPOTrainer (grpo_repro.train.trainer, itself a TRL
GRPOTrainer subclass; importing this module imports TRL); grpo_repro.train.grpo.build_trainer uses it
when train.fast_step is true. Line
numbers below refer to the installed trl/trainer/grpo_trainer.py (TRL 1.16.0) unless another file
is named; tests/unit/train/test_fast.py pins what is relied on.

1. rollouts="sampler" -- hook `_generate_single_turn` (l.1763-1891). TRL calls it from `_generate`
   (l.2193; the non-rollout_func branch, l.2221-2224) with the tokenized prompts, one row per
   completion (RepeatSampler puts the G copies of a prompt next to each other), and expects
   (completion_ids: list[list[int]], logprobs) back, each completion cut after its first EOS, EOS
   kept, a completion without EOS keeping all max_completion_length tokens (l.1880-1889). We return
   exactly that from the project's batched sampler (`sampler.HFSampler`, shared-prefix cache,
   inverse-CDF draws) fed with TRL's prompt ids; EOS set = TRL's `self.eos_token_ids` (l.409-416),
   pad = TRL's tokenizer pad; temperature / top_p / top_k / max_completion_length from the trainer
   (the fields TRL's GenerationConfig is built from, l.1155-1173). Everything downstream --
   padding, masks, rewards, advantages, metrics (l.2437-2938) -- is TRL's own code. Falls back to
   TRL's path for vLLM, continuous batching, images, tools, min_p, repetition_penalty != 1 and
   generation_kwargs.
   Seeds: prompt group g of the k-th generation at optimizer step `state.global_step` on process
   r draws from its own torch.Generator seeded with
       derive_seed(args.seed, "grpo-rollout", mode, global_step, k, r * n_groups + g)   (k = 0 here)
   (g counts groups of G rows, so a prompt drawn twice into one batch is two groups, each with its
   own seed)
   and the global torch RNG is not used. A run is reproducible, and because the project only
   checkpoints at generation boundaries (save_steps % mu == 0) a resumed trainer, whose buffer is
   empty (`_buffered_inputs is None`, l.951 / l.1539), regenerates at the same global_step, on the
   same prompts (EpochSeededRepeatSampler), the same batch.
   Why not `rollout_func` (l.2200-2217): experimental (warning at l.609-614), it would also have to
   tokenize (and template) the prompts and pass through TRL's `extra_fields`; the narrower
   `_generate_single_turn` hook keeps TRL's tokenization and every check after it.

2. logps="shared_prefix" -- hook `_get_per_token_logps_and_entropies` (l.1419-1508): the same
   tensors, each distinct prompt computed once (grpo_repro.train.shared_logps). Used for the policy
   (with grad) and the reference (no grad). The scored logits are TRL's fused head's: under
   autocast (train.bf16) or cast_lm_head_to_fp32 TRL's own kernel scores them (float32 gradient
   products), with the config's logit scale and final-logit softcapping; the entropy carries a
   gradient under an entropy bonus
   (tests/unit/train/test_fast_logits.py). Falls back to TRL's method for multimodal inputs, MoE
   aux loss, a wrapped (DDP) model, or an architecture the path is not checked on
   (shared_logps.CHECKED_MODEL_TYPES; the reason is logged, naming train.fast_step).

3. defer_old_logps=True -- with num_iterations > 1 TRL computes old-policy log-probs by an extra
   no-grad forward at generation time (condition l.2643, forward l.2646-2655). When
   steps_per_generation == gradient_accumulation_steps (always in the project), every micro-batch is
   first used in `_compute_loss` before the first optimizer step after its generation, i.e. by the
   policy that generated it: the detached log-probs of that first forward ARE the old log-probs (TRL
   does the same for mu = 1, l.3065-3066). So `_generate_and_score_completions` makes that forward
   return a placeholder and drops the key; the first `_compute_loss` on the micro-batch stores its
   own detached log-probs into the (buffered) inputs dict right after its forward and before TRL
   reads `inputs["old_per_token_logps"]` (l.3065); iterations 2..mu reuse them.
   Mirror variants (sync_ref_model, alpha 1, sync every step: SyncRefModelCallback copies the policy
   into the reference at every on_step_end, callbacks.py l.148-151): the reference at generation IS
   the generating policy, so `ref_per_token_logps` (l.2709-2739) is deferred the same way.
"""

from __future__ import annotations

import logging

import torch

from grpo_repro.sampler.hf import HFSampler
from grpo_repro.sampler.params import SampleOutput, SamplingParams
from grpo_repro.seeds import derive_seed
from grpo_repro.train.shared_logps import refusal, shared_prefix_logps
from grpo_repro.train.trainer import PaperGRPOTrainer

__all__ = ["FastGRPOTrainer", "PaperGRPOTrainer", "TokenSampler", "group_rows"]
logger = logging.getLogger(__name__)
FAST_DEFAULTS = {"rollouts": "sampler", "logps": "shared_prefix", "defer_old_logps": True}


class TokenSampler(HFSampler):
    """HFSampler fed with token ids instead of strings; completions are not decoded."""

    def _encode(self, prompts):
        import torch

        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for i, p in enumerate(prompts):
            if len(p):
                ids[i, width - len(p) :] = torch.as_tensor(p, dtype=torch.long)
                mask[i, width - len(p) :] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        pos = (mask.cumsum(-1) - 1).clamp_(min=0)
        return ids, mask, pos

    def _finish(self, out_tokens, lengths, done, n_prompts, n):
        lengths_np = lengths.cpu().numpy()
        return SampleOutput(
            [[""] * n for _ in range(n_prompts)],
            lengths_np.reshape(n_prompts, n),
            done.cpu().numpy().reshape(n_prompts, n),
            tokens=out_tokens.cpu().numpy().reshape(n_prompts, n, -1),
        )


def group_rows(prompt_ids, group_size: int | None = None):
    """[(start, count)] of runs of identical consecutive prompts, never across a multiple of
    `group_size` (TRL's batches hold whole groups of G rows: two groups of the same prompt, side by
    side in a batch, stay two groups with a seed each, on 1 process as on N)."""
    runs = []
    for i, ids in enumerate(prompt_ids):
        boundary = bool(group_size) and i % group_size == 0
        if runs and not boundary and prompt_ids[runs[-1][0]] == ids:
            runs[-1][1] += 1
        else:
            runs.append([i, 1])
    return [tuple(r) for r in runs]


class FastGRPOTrainer(PaperGRPOTrainer):
    """PaperGRPOTrainer with the fast step. fast_options: {"rollouts": "sampler" | "trl",
    "logps": "shared_prefix" | "trl", "defer_old_logps": bool} (defaults: all fast; the benchmark
    switches each part off to measure it alone); the other arguments are GRPOTrainer's."""

    def __init__(self, *args, fast_options: dict | None = None, **kwargs):
        unknown = set(fast_options or {}) - set(FAST_DEFAULTS)
        if unknown:
            raise ValueError(
                f"unknown fast_options {sorted(unknown)}; expected {sorted(FAST_DEFAULTS)}"
            )
        self.fast_options = {**FAST_DEFAULTS, **(fast_options or {})}
        super().__init__(*args, **kwargs)

    # ------------------------------------------------------------------ rollouts
    def _sampler_usable(self, images, multimodal_fields, has_tool_images):
        a = self.args
        return (
            self.fast_options["rollouts"] == "sampler"
            and not self.use_vllm
            and not self.use_transformers_continuous_batching
            and images is None
            and not multimodal_fields
            and not has_tool_images
            and not self.tools
            and self.min_p is None
            and self.repetition_penalty == 1.0
            and a.generation_kwargs is None
            and self.temperature > 0
        )

    def _rollout_sampler(self):
        if getattr(self, "_fast_sampler", None) is None:
            tok = self._tokenizer
            side = tok.padding_side
            model = self.accelerator.unwrap_model(self.model)
            self._fast_sampler = TokenSampler(model, tok, batch_prompts=1 << 30)
            tok.padding_side = side  # HFSampler sets "left"; TRL pads its own tensors
            self._fast_sampler.eos_ids = list(
                self.eos_token_ids
            )  # exactly TRL's EOS set (l.409-416)
            self._fast_sampler.pad_id = tok.pad_token_id
        return self._fast_sampler

    def rollout_seed(self, mode, generation_in_step, group):
        """Seed of prompt group `group` (its index in the global generation batch, whole groups
        per process: the same prompt gets the same samples with 1 or N processes)."""
        return derive_seed(
            int(self.args.seed),
            "grpo-rollout",
            mode,
            int(self.state.global_step),
            int(generation_in_step),
            int(group),
        )

    def _generate_single_turn(
        self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False
    ):
        if not self._sampler_usable(images, multimodal_fields, has_tool_images):
            return super()._generate_single_turn(
                prompt_ids, images, multimodal_fields, num_generations, has_tool_images
            )
        mode = "train" if self.model.training else "eval"
        key = (mode, int(self.state.global_step))
        prev_key, prev_k = getattr(self, "_gen_counter", None) or (None, -1)
        k = prev_k + 1 if prev_key == key else 0  # k-th generation at this optimizer step
        self._gen_counter = (key, k)
        size = max(1, int(num_generations))  # G; 1 for TRL's per-sample tool turns
        runs = group_rows([list(x) for x in prompt_ids], size)
        params = SamplingParams(
            temperature=float(self.temperature),
            top_p=float(self.top_p or 1.0),
            top_k=int(self.top_k or 0),
            max_new_tokens=int(self.max_completion_length),
        )
        sampler = self._rollout_sampler()
        completion_ids: list = [None] * len(prompt_ids)
        by_count: dict[int, list[int]] = {}
        for g, (_start, count) in enumerate(runs):
            by_count.setdefault(count, []).append(g)
        was_training = sampler.model.training
        # whole groups per process: a group's index in the global batch is its first global row / G
        first_row = int(self.accelerator.process_index) * len(prompt_ids)
        for count, groups in by_count.items():
            seeds = [self.rollout_seed(mode, k, (first_row + runs[g][0]) // size) for g in groups]
            out = sampler.sample(
                [list(prompt_ids[runs[g][0]]) for g in groups], count, params, seeds
            )
            for j, g in enumerate(groups):
                start = runs[g][0]
                for s in range(count):
                    completion_ids[start + s] = out.tokens[j, s, : out.lengths[j, s]].tolist()
        sampler.model.train(was_training)
        return completion_ids, None

    # ------------------------------------------------------------------ log-probs
    def _get_per_token_logps_and_entropies(
        self,
        model,
        input_ids,
        attention_mask,
        logits_to_keep,
        batch_size=None,
        compute_entropy=False,
        compute_aux_loss=False,
        **mm,
    ):
        deferred = getattr(self, "_defer_now", None)
        if deferred is not None and not torch.is_grad_enabled():
            is_ref = self.ref_model is not None and model is self.ref_model
            name = "ref_per_token_logps" if is_ref else "old_per_token_logps"
            if name in deferred:  # placeholder; filled by the first _compute_loss on this batch
                return (
                    torch.zeros(input_ids.shape[0], logits_to_keep, device=input_ids.device),
                    None,
                    None,
                )
        res = None
        unwrapped = self.accelerator.unwrap_model(model)
        if (
            self.fast_options["logps"] == "shared_prefix"
            and not compute_aux_loss
            and all(v is None for v in mm.values())
            and unwrapped is model
            and not self._policy_wrapped()
            and self._shared_logps_allowed(model)
        ):
            res = shared_prefix_logps(
                model,
                input_ids,
                attention_mask,
                logits_to_keep,
                self.temperature,
                compute_entropy,
                self.accelerator.autocast(),
                fp32_head=bool(self.args.cast_lm_head_to_fp32),
                entropy_grad=bool(self._entropy_bonus_enabled),
            )
        if res is None:
            logps_, ent, aux = super()._get_per_token_logps_and_entropies(
                model,
                input_ids,
                attention_mask,
                logits_to_keep,
                batch_size,
                compute_entropy,
                compute_aux_loss,
                **mm,
            )
        else:
            (logps_, ent), aux = res, None
        fill = getattr(self, "_fill_inputs", None)
        if (
            fill is not None and torch.is_grad_enabled()
        ):  # the first loss forward on a deferred batch
            for name in self._deferred_keys:
                if name not in fill:
                    fill[name] = logps_.detach()
            self._fill_inputs = None
        return logps_, ent, aux

    def _policy_wrapped(self) -> bool:
        """True when the trained model runs wrapped (DDP, FSDP, DeepSpeed: several processes). Its
        log-probs then take TRL's path, and so do the reference's and the old policy's: one path
        for all three keeps pi / pi_ref exactly 1 where pi is pi_ref (two paths differ by round-off,
        and Adam turns a round-off gradient, e.g. of a batch whose advantages are all 0, into a
        full-size step; tests/workflow/test_multiprocess.py)."""
        return getattr(self, "model_wrapped", self.model) is not self.model

    def _shared_logps_allowed(self, model) -> bool:
        """False (TRL's log-probs, the reason logged once per model) for an architecture the
        shared-prefix path is not checked on (shared_logps.refusal)."""
        reason = refusal(model)
        if reason is not None:
            seen = self.__dict__.setdefault("_logged_refusals", set())
            if id(model) not in seen:
                seen.add(id(model))
                logger.warning(
                    "train.fast_step: log-probs by TRL's path, not the shared-prefix one: %s",
                    reason,
                )
        return reason is None

    def _deferrable_keys(self):
        a = self.args
        if not self.fast_options["defer_old_logps"] or not self.model.training or self.use_vllm:
            return set()
        if a.steps_per_generation != a.gradient_accumulation_steps:
            return set()
        if self.beta != 0.0 and self.ref_model is None:  # PEFT: the reference call uses
            return set()  # self.model too and could not be told apart from the old-policy one
        keys = set()
        generate_every = a.steps_per_generation * self.num_iterations
        if a.gradient_accumulation_steps % generate_every != 0:  # TRL would compute old logps
            keys.add("old_per_token_logps")
        if (
            self.beta != 0.0
            and a.sync_ref_model
            and self.ref_model is not None
            and a.ref_model_mixup_alpha == 1.0
            and a.ref_model_sync_steps == 1
        ):
            keys.add("ref_per_token_logps")
        return keys

    def _generate_and_score_completions(self, inputs):
        keys = self._deferrable_keys()
        if self.model.training:  # the keys the buffered training batches lack until their first use
            self._deferred_keys = keys
        self._defer_now = keys if keys else None
        try:
            out = super()._generate_and_score_completions(inputs)
        finally:
            self._defer_now = None
        for name in keys:
            out.pop(name, None)
        return out

    def _compute_loss(self, model, inputs):
        missing = [k for k in getattr(self, "_deferred_keys", ()) if k not in inputs]
        self._fill_inputs = inputs if missing else None
        try:
            return super()._compute_loss(model, inputs)
        finally:
            self._fill_inputs = None
