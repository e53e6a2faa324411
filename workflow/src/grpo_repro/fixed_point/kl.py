"""Sequence-level KL(pi || pi_ref) per prompt, estimated from samples of the trained policy pi
(the mechanism measurement of the fixed-point test; Sec. 2 objective, Thm 1).

KL(pi || pi_ref)(q) = E_{o ~ pi(.|q)}[log pi(o|q) - log pi_ref(o|q)], estimated by the mean over n
completions sampled from pi at temperature 1 (the policy's own distribution; at another temperature
the sampling distribution is not pi and the estimate is flagged), with its standard error. The
theory's Gibbs policy at p* has KL = the Bernoulli KL(p* || p_ref)
(grpo_repro.dynamics.prediction.gibbs_kl): the comparison says how much of pi's departure from
pi_ref is the success/failure tilt the theory describes and how much is change within the success
and failure sets.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def sequence_logps(model, prompt_ids: list[int], completions: list[list[int]]) -> np.ndarray:
    """log model(o | q) of each completion token list (EOS included when sampled) after the prompt."""
    import torch

    n, p = len(completions), len(prompt_ids)
    width = p + max(len(c) for c in completions)
    ids = torch.zeros((n, width), dtype=torch.long)
    mask = torch.zeros((n, width), dtype=torch.long)
    for i, c in enumerate(completions):
        row = list(prompt_ids) + list(c)
        ids[i, : len(row)] = torch.tensor(row)
        mask[i, : len(row)] = 1
    with torch.inference_mode():
        logits = model(input_ids=ids, attention_mask=mask).logits.float()
    logp = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, ids[:, 1:].unsqueeze(-1))[..., 0]
    out = np.zeros(n)
    for i, c in enumerate(completions):
        out[i] = float(logp[i, p - 1 : p - 1 + len(c)].sum())
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
) -> pd.DataFrame:
    """prompt_id, kl (mean of log pi - log pi_ref over `samples` completions of pi), kl_se,
    p_hat (their success rate), temperature; one row per record."""
    from grpo_repro.models import load_policy
    from grpo_repro.reward import is_correct
    from grpo_repro.sampler.hf import HFSampler
    from grpo_repro.sampler.params import SamplingParams
    from grpo_repro.seeds import derive_seed

    policy, tok = load_policy(policy_dir)
    ref, _ = load_policy(ref_dir)
    sampler = HFSampler(policy, tok, batch_prompts=32)
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
