"""The fast step's rollouts (grpo_repro.train.fast, part rollouts="sampler"): TRL's hook
GRPOTrainer._generate_single_turn answered by the project's batched sampler. TRL names are those of
trl.trainer.grpo_trainer (TRL 1.16.0); tests/unit/train/test_fast.py pins what is relied on.

TRL calls the hook from GRPOTrainer._generate (its branch without a rollout_func) with the tokenized
prompts, one row per completion (RepeatSampler puts the G copies of a prompt next to each other),
and expects (completion_ids: list[list[int]], logprobs) back, each completion cut after its first
EOS, EOS kept, a completion without EOS keeping all max_completion_length tokens (the end of
GRPOTrainer._generate_single_turn). We return exactly that from the project's batched sampler
(`sampler.HFSampler`, shared-prefix cache, inverse-CDF draws) fed with TRL's prompt ids; EOS set =
TRL's `self.eos_token_ids` (set in GRPOTrainer.__init__), pad = TRL's tokenizer pad; temperature /
top_p / top_k / max_completion_length from the trainer (the fields GRPOTrainer.__init__ builds TRL's
GenerationConfig from). Everything downstream -- padding, masks, rewards, advantages, metrics (the
rest of GRPOTrainer._generate_and_score_completions) -- is TRL's own code. Falls back to TRL's path
for vLLM, continuous batching, images, tools, min_p, repetition_penalty != 1 and generation_kwargs.

Seeds: prompt group g of the k-th generation at optimizer step `state.global_step` on process r
draws from its own torch.Generator seeded with
    derive_seed(args.seed, "grpo-rollout", mode, global_step, k, r * n_groups + g)   (k = 0 here)
(g counts groups of G rows, so a prompt drawn twice into one batch is two groups, each with its own
seed) and the global torch RNG is not used. A run is reproducible, and because the project only
checkpoints at generation boundaries (save_steps % mu == 0) a resumed trainer, whose buffer is empty
(`_buffered_inputs is None`: set in GRPOTrainer.__init__, tested in GRPOTrainer._prepare_inputs),
regenerates at the same global_step, on the same prompts (EpochSeededRepeatSampler), the same batch.

Why not `rollout_func` (GRPOTrainer._generate's other branch): experimental (GRPOTrainer.__init__
warns), it would also have to tokenize (and template) the prompts and pass through TRL's
`extra_fields`; the narrower `_generate_single_turn` hook keeps TRL's tokenization and every check
after it.
"""

from __future__ import annotations

import torch

from grpo_repro.sampler.hf import HFSampler
from grpo_repro.sampler.params import SampleOutput, SamplingParams
from grpo_repro.stats import derive_seed

__all__ = ["SamplerRollouts", "TokenSampler", "group_rows"]


class TokenSampler(HFSampler):
    """HFSampler fed with token ids instead of strings; completions are not decoded."""

    def _encode(self, prompts):
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


class SamplerRollouts:
    """Mixin of FastGRPOTrainer (before the GRPOTrainer it extends): rollouts by TokenSampler when
    fast_options["rollouts"] == "sampler" and the setup allows it (module docstring), else TRL's."""

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
            tok = getattr(self.processing_class, "tokenizer", self.processing_class)
            side = tok.padding_side
            model = self.accelerator.unwrap_model(self.model)
            self._fast_sampler = TokenSampler(model, tok, batch_prompts=1 << 30)
            tok.padding_side = side  # HFSampler sets "left"; TRL pads its own tensors
            # exactly TRL's EOS set (GRPOTrainer.__init__ sets self.eos_token_ids)
            self._fast_sampler.eos_ids = list(self.eos_token_ids)
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
