"""HFSampler: batched, KV-cached, prefill-sharing sampling from a transformers causal LM on CPU or
GPU, exact per-prompt seeded draws (see grpo_repro.sampler for the two cache strategies)."""

from __future__ import annotations

import time

import numpy as np

from grpo_repro.sampler.attention import (
    SHARED_ATTN,
    SharedState,
    carrying,
    register_shared_attention,
    supports_shared_prefix,
)
from grpo_repro.sampler.cache import make_cache
from grpo_repro.sampler.params import SampleOutput, SamplingParams, draw_tokens, eos_ids


class HFSampler:
    """Batched, KV-cached, prefill-sharing sampler for a transformers causal LM (see module doc).

    cache="auto" uses "shared" when `supports_shared_prefix(model)`, else "expand"."""

    backend = "hf"

    def __init__(
        self,
        model,
        tokenizer,
        batch_prompts: int = 32,
        compact_fraction: float = 0.25,
        cache: str = "auto",
        device=None,
    ):
        if cache not in ("auto", "shared", "expand"):
            raise ValueError(f"cache must be auto, shared or expand, got {cache!r}")
        if tokenizer.pad_token_id is None:
            raise ValueError(
                "tokenizer has no pad token; set tokenizer.pad_token = tokenizer.eos_token"
            )
        tokenizer.padding_side = "left"
        self.model = model
        self.tokenizer = tokenizer
        self.batch_prompts = int(batch_prompts)
        self.compact_fraction = float(compact_fraction)
        self.device = device if device is not None else next(model.parameters()).device
        self.eos_ids = eos_ids(model, tokenizer)
        self.pad_id = tokenizer.pad_token_id
        self.cache_mode = (
            ("shared" if supports_shared_prefix(model) else "expand") if cache == "auto" else cache
        )
        self._layer_types = sorted(
            set(getattr(model.config, "layer_types", None) or ["full_attention"])
        )

    def sample(
        self, prompts: list[str], n: int, params: SamplingParams, seeds: list[int], progress=None
    ) -> SampleOutput:
        """n completions of every prompt; prompts are processed `batch_prompts` at a time, in order.

        `seeds[i]` seeds prompt i's generator. `progress(k)` is called with the number of samples
        completed after each batch. stats: forward passes, rows decoded (row_steps) and rows
        actually computed (forward_rows; fewer with the prefix tree)."""
        if len(seeds) != len(prompts):
            raise ValueError(f"{len(prompts)} prompts but {len(seeds)} seeds")
        texts, lengths, finished, tokens = [], [], [], []
        stats = {
            "cache": self.cache_mode,
            "forward_calls": 0,
            "row_steps": 0,
            "forward_rows": 0,
            "compactions": 0,
        }
        t0 = time.perf_counter()
        old_attn = getattr(self.model.config, "_attn_implementation", None)
        if self.cache_mode == "shared":
            register_shared_attention()
            self.model.set_attn_implementation(SHARED_ATTN)
        try:
            for start in range(0, len(prompts), self.batch_prompts):
                sl = slice(start, start + self.batch_prompts)
                run = self._batch_shared if self.cache_mode == "shared" else self._batch_expand
                batch = self._setup(prompts[sl], n, seeds[sl], params.max_new_tokens)
                out = run(batch, n, params, stats)
                texts.extend(out.texts)
                lengths.append(out.lengths)
                finished.append(out.finished)
                tokens.append(out.tokens)
                if progress is not None:
                    progress(len(out.texts) * n)
        finally:
            if self.cache_mode == "shared":
                self.model.set_attn_implementation(old_attn)
        stats["seconds"] = time.perf_counter() - t0
        if not lengths:
            return SampleOutput(
                [],
                np.zeros((0, n), int),
                np.zeros((0, n), bool),
                stats,
                np.zeros((0, n, params.max_new_tokens), int),
            )
        return SampleOutput(
            texts, np.concatenate(lengths), np.concatenate(finished), stats, np.concatenate(tokens)
        )

    # -------------------------------------------------------------------------------- helpers

    def _uniforms(self, seeds, n, steps):
        """(steps, P * n) uniforms; column p * n + s belongs to sample s of prompt p."""
        import torch

        per_prompt = []
        for seed in seeds:
            g = torch.Generator(device="cpu")
            g.manual_seed(int(seed))
            per_prompt.append(torch.rand((steps, n), generator=g))
        return torch.cat(per_prompt, dim=1).to(self.device)

    def _forward(self, ids, mask, pos, cache, state=None, **kw):
        """One forward; `state`: the shared-prefix attention's, also for models that rebuild the
        mask they are given (Llama; sampler.attention.carrying)."""
        with carrying(state):
            return self.model(
                input_ids=ids,
                attention_mask=mask,
                position_ids=pos,
                use_cache=True,
                cache=cache,
                **kw,
            )

    def _encode(self, prompts):
        enc = self.tokenizer(prompts, return_tensors="pt", padding=True)
        ids = enc["input_ids"].to(self.device)
        mask = enc["attention_mask"].to(self.device)
        pos = (mask.long().cumsum(-1) - 1).clamp_(min=0)
        return ids, mask, pos

    def _finish(self, out_tokens, lengths, done, n_prompts, n) -> SampleOutput:
        lengths_np = lengths.cpu().numpy()
        tokens_np = out_tokens.cpu().numpy()
        completions = self.tokenizer.batch_decode(
            [tokens_np[r, : lengths_np[r]].tolist() for r in range(len(lengths_np))],
            skip_special_tokens=True,
        )
        texts = [completions[p * n : (p + 1) * n] for p in range(n_prompts)]
        return SampleOutput(
            texts,
            lengths_np.reshape(n_prompts, n),
            done.cpu().numpy().reshape(n_prompts, n),
            tokens=tokens_np.reshape(n_prompts, n, -1),
        )

    def _setup(self, prompts, n, seeds, steps):
        """What both cache strategies start from: the encoded prompts (ids, mask, positions), the
        uniforms, the EOS ids and the output buffers (tokens, lengths, finished)."""
        import torch

        dev, rows_total = self.device, len(prompts) * n
        ids, mask, pos = self._encode(prompts)
        outputs = (
            torch.full((rows_total, steps), self.pad_id, dtype=torch.long, device=dev),
            torch.full((rows_total,), steps, dtype=torch.long, device=dev),
            torch.zeros(rows_total, dtype=torch.bool, device=dev),
        )
        eos = torch.tensor(self.eos_ids, device=dev)
        return ids, mask, pos, self._uniforms(seeds, n, steps), eos, outputs

    # -------------------------------------------------------------------------------- shared

    def _batch_shared(self, batch, n, params: SamplingParams, stats) -> SampleOutput:
        """Prefix-tree decoding on the shared-prefix cache (see the module doc)."""
        import torch

        ids, mask, pos, uniforms, eos, (out_tokens, lengths, done) = batch
        dev, steps, n_prompts = self.device, params.max_new_tokens, len(ids)
        with torch.inference_mode():
            cache = make_cache(self.model, 0, shared_steps=steps)
            state = SharedState(cache, mask)
            masks = {lt: state for lt in self._layer_types}
            res = self._forward(ids, masks, pos, cache, state, logits_to_keep=1)
            stats["forward_calls"] += 1
            logits = res.logits[:, -1, :]  # one row per node; the first nodes are the prompts
            vocab = logits.shape[-1]
            first_pos = pos[:, -1] + 1  # position of generated token 0 of each prompt
            node_prompt = torch.arange(n_prompts, device=dev)
            n_nodes = n_prompts
            rows = torch.arange(n_prompts * n, device=dev)  # global index p * n + s of live samples
            row_node = rows // n
            for t in range(steps):
                same = len(rows) == n_nodes and bool(
                    (row_node == torch.arange(n_nodes, device=dev)).all()
                )
                tok = draw_tokens(
                    logits, uniforms[t, rows], params, row_of=None if same else row_node
                )
                out_tokens[rows, t] = tok
                fin = torch.isin(tok, eos)
                if bool(fin.any()):
                    lengths[rows[fin]] = t + 1
                    done[rows[fin]] = True
                    keep = ~fin
                    rows, tok, row_node = rows[keep], tok[keep], row_node[keep]
                if t == steps - 1 or len(rows) == 0:
                    break
                # children: distinct (node, token) pairs, sorted (so grouped by prompt)
                key = row_node * vocab + tok
                uniq, inv = torch.unique(key, sorted=True, return_inverse=True)
                parent, child_tok = uniq // vocab, uniq % vocab
                forks = bool((parent[1:] == parent[:-1]).any()) if len(parent) > 1 else False
                dead = n_nodes - len(parent)
                if t == 0 or forks or dead >= max(1, self.compact_fraction * n_nodes):
                    # fork / compact the tree: node i of the next step continues old node parent[i]
                    cache.batch_select_indices(parent)
                    node_prompt = node_prompt[parent]
                    n_nodes = len(parent)
                    state.set_rows(node_prompt)
                    node_tok, row_node = child_tok, inv
                    stats["compactions"] += 1
                else:  # every node has at most one child: keep the layout, idle nodes feed a pad
                    node_tok = torch.full((n_nodes,), self.pad_id, dtype=torch.long, device=dev)
                    node_tok[parent] = child_tok
                    row_node = parent[inv]
                res = self._forward(
                    node_tok.unsqueeze(1),
                    masks,
                    (first_pos[node_prompt] + t).unsqueeze(1),
                    cache,
                    state,
                )
                logits = res.logits[:, -1, :]
                stats["forward_calls"] += 1
                stats["forward_rows"] += n_nodes
                stats["row_steps"] += len(rows)
        del cache, res, state, masks
        return self._finish(out_tokens, lengths, done, n_prompts, n)

    # -------------------------------------------------------------------------------- expand

    def _batch_expand(self, batch, n, params: SamplingParams, stats) -> SampleOutput:
        """Generic path: prompt cache repeated per sample, finished rows dropped periodically."""
        import torch

        ids, mask, pos, uniforms, eos, (out_tokens, lengths, done) = batch
        dev, steps, n_prompts = self.device, params.max_new_tokens, len(ids)
        with torch.inference_mode():
            cache = make_cache(self.model, ids.shape[1] + steps)
            res = self._forward(ids, mask, pos, cache, logits_to_keep=1)
            stats["forward_calls"] += 1
            cache.batch_repeat_interleave(n)  # the n samples of a prompt share its prefill
            logits = res.logits[:, -1, :].repeat_interleave(n, dim=0)
            mask = mask.repeat_interleave(n, dim=0)
            next_pos = pos[:, -1].repeat_interleave(n, dim=0) + 1
            rows = torch.arange(n_prompts * n, device=dev)  # global row of each live batch row
            alive = torch.ones(n_prompts * n, dtype=torch.bool, device=dev)
            for t in range(steps):
                tok = draw_tokens(logits, uniforms[t, rows], params)
                out_tokens[rows[alive], t] = tok[alive]
                fin = alive & torch.isin(tok, eos)
                lengths[rows[fin]] = t + 1
                done[rows[fin]] = True
                alive &= ~fin
                n_alive = int(alive.sum())
                if t == steps - 1 or n_alive == 0:
                    break
                if len(rows) - n_alive >= max(1, self.compact_fraction * len(rows)):
                    keep = alive.nonzero().squeeze(1)
                    cache.batch_select_indices(keep)
                    mask, next_pos, rows, tok, alive = (
                        mask[keep],
                        next_pos[keep],
                        rows[keep],
                        tok[keep],
                        alive[keep],
                    )
                    stats["compactions"] += 1
                mask = torch.cat([mask, mask.new_ones((len(rows), 1))], dim=1)
                res = self._forward(tok.unsqueeze(1), mask, next_pos.unsqueeze(1), cache)
                stats["forward_calls"] += 1
                stats["forward_rows"] += len(rows)
                stats["row_steps"] += n_alive
                logits = res.logits[:, -1, :]
                next_pos = next_pos + 1
        del cache, res
        return self._finish(out_tokens, lengths, done, n_prompts, n)
