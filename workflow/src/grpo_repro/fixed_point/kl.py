"""Sequence-level KL(pi || pi_ref) per prompt, estimated from samples of the trained policy pi
(the mechanism measurement of the fixed-point test; Sec. 2 objective, Thm 1).

KL(pi || pi_ref)(q) = E_{o ~ pi(.|q)}[log pi(o|q) - log pi_ref(o|q)], estimated by the mean over n
completions sampled from pi at temperature 1 (the policy's own distribution; at another temperature
the sampling distribution is not pi and the estimate is flagged), with its standard error. The
theory's Gibbs policy at p* has KL = the Bernoulli KL(p* || p_ref)
(grpo_repro.dynamics.prediction.gibbs_kl): the comparison says how much of pi's departure from
pi_ref is the success/failure tilt the theory describes and how much is change within the success
and failure sets.

The job runs where its `gpu` resource puts it (fixed_point_kl: the GPU it holds, else the CPU).
Scoring a completion takes the model's logits over the whole vocabulary at every position, so the
completions are scored `chunk_rows` at a time: at Qwen2.5-0.5B's 151,936 tokens one row of ~400
positions is ~0.24 GB of float32 logits, twice that with log_softmax's output. `peak_bytes` is the
memory model (both models' float32 weights and one chunk's logits) that tests/unit/fixed_point/
test_kl.py holds under 8 GB at the study's sizes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: bytes one chunk's logits may take (float32 logits and log_softmax's output of the same size)
LOGITS_BUDGET = 2 * 2**30
FLOAT32 = 4  # bytes
SAMPLER_PROMPTS = 32  # prompts the KL's sampler draws from at once (x the samples per prompt)


def chunk_rows(width: int, vocab: int, budget: int = LOGITS_BUDGET) -> int:
    """Completions scored at once: their float32 logits over `vocab` at `width` positions, and
    log_softmax's output of the same size, within `budget` bytes (at least one)."""
    return max(1, budget // (2 * width * vocab * FLOAT32))


def peak_bytes(parameters: int, width: int, vocab: int, budget: int = LOGITS_BUDGET) -> int:
    """The memory model of `kl_table`'s scoring: both models' float32 weights (policy and pi_ref,
    `parameters` each) and one chunk's logits with log_softmax's output (chunk_rows)."""
    rows = chunk_rows(width, vocab, budget)
    return 2 * parameters * FLOAT32 + 2 * rows * width * vocab * FLOAT32


def sequence_logps(
    model, prompt_ids: list[int], completions: list[list[int]], budget: int = LOGITS_BUDGET
) -> np.ndarray:
    """log model(o | q) of each completion token list (EOS included when sampled) after the prompt,
    on the model's device, `chunk_rows` completions at a time."""
    import torch

    n, p = len(completions), len(prompt_ids)
    width = p + max(len(c) for c in completions)
    device = next(model.parameters()).device
    ids = torch.zeros((n, width), dtype=torch.long)
    mask = torch.zeros((n, width), dtype=torch.long)
    for i, c in enumerate(completions):
        row = list(prompt_ids) + list(c)
        ids[i, : len(row)] = torch.tensor(row)
        mask[i, : len(row)] = 1
    rows = chunk_rows(width, model.config.vocab_size, budget)
    out = np.zeros(n)
    for start in range(0, n, rows):
        part, part_mask = (
            ids[start : start + rows].to(device),
            mask[start : start + rows].to(device),
        )
        with torch.inference_mode():
            logits = model(input_ids=part, attention_mask=part_mask).logits.float()
            logp = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, part[:, 1:, None])[..., 0]
        del logits
        logp = logp.cpu()
        for i, c in enumerate(completions[start : start + rows]):
            out[start + i] = float(logp[i, p - 1 : p - 1 + len(c)].sum())
    return out


def kl_table(
    policy_dir,
    ref_dir,
    records: list[dict],
    samples: int,
    seed: int,
    run: str,
    max_new_tokens: int,
    temperature: float = 1.0,
    device: str = "cpu",
) -> pd.DataFrame:
    """prompt_id, kl (mean of log pi - log pi_ref over `samples` completions of pi), kl_se,
    p_hat (their success rate), temperature; one row per record. Both models in float32 on
    `device` (the job's GPU, or the CPU)."""
    from grpo_repro.models import load_policy
    from grpo_repro.reward import is_correct
    from grpo_repro.sampler.hf import HFSampler
    from grpo_repro.sampler.params import SamplingParams
    from grpo_repro.stats import derive_seed

    policy, tok = load_policy(policy_dir, device=device)
    ref, _ = load_policy(ref_dir, device=device)
    sampler = HFSampler(policy, tok, batch_prompts=SAMPLER_PROMPTS)
    params = SamplingParams(temperature=temperature, max_new_tokens=max_new_tokens)
    seeds = [derive_seed(seed, "kl", run, r["prompt_id"]) for r in records]
    out = sampler.sample([r["prompt"] for r in records], samples, params, seeds)
    rows = []
    for i, rec in enumerate(records):
        prompt_ids = tok(rec["prompt"])["input_ids"]
        comps = [out.tokens[i, s, : out.lengths[i, s]].tolist() for s in range(samples)]
        diff = sequence_logps(policy, prompt_ids, comps) - sequence_logps(ref, prompt_ids, comps)
        wins = [is_correct(t, rec["gold"], "strict") for t in out.texts[i]]
        rows.append(
            {
                "prompt_id": rec["prompt_id"],
                "kl": float(diff.mean()),
                "kl_se": float(diff.std(ddof=1) / np.sqrt(samples)) if samples > 1 else np.nan,
                "p_hat": float(np.mean(wins)),
                "samples": samples,
                "temperature": temperature,
            }
        )
    return pd.DataFrame(rows)
