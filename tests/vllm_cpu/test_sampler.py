"""The evaluation sampler on the real vLLM engine (vLLM's CPU backend, grpo_repro.sampler.vllm) against
the batched transformers sampler and the model's own probabilities: greedy completions equal in
float32, sampled completions from the model's distribution (a test whose power is shown), and
per-request seeds reproduce. The evaluation job: test_eval_job.py."""

import numpy as np
import pytest
import torch
from scipy import stats

from grpo_repro.evaluate.job import make_sampler
from grpo_repro.models import load_policy
from grpo_repro.sampler.hf import HFSampler
from grpo_repro.sampler.params import SamplingParams
from tests.helpers.tiny_lm import MICRO_PROMPTS

torch.set_num_threads(1)
N_DRAWS = 10_000  # samples per prompt of the distribution test
ALPHA = 1e-4  # its false-alarm rate per prompt


@pytest.fixture(scope="module")
def engines(ref):
    model, tok = load_policy(ref, dtype="float32")
    vl = make_sampler("vllm", model, tok, model_path=ref, dtype="float32", platform="cpu")
    yield model, tok, HFSampler(model, tok, batch_prompts=32), vl
    vl.close()


def test_cpu_engine_options(engines):
    """The CPU engine runs eagerly, without chunked prefill, in float32 as asked."""
    *_, vl = engines
    cfg = vl.llm.llm_engine.vllm_config
    assert cfg.model_config.enforce_eager and cfg.model_config.dtype == torch.float32
    assert not cfg.scheduler_config.enable_chunked_prefill


def test_greedy_equals_hf(engines):
    """Greedy completions (16 new tokens) of every micro prompt are the HF sampler's, token for token."""
    _, _, hf, vl = engines
    greedy = SamplingParams(temperature=0.0, max_new_tokens=16)
    a = hf.sample(MICRO_PROMPTS, 1, greedy, [0] * len(MICRO_PROMPTS))
    b = vl.sample(MICRO_PROMPTS, 1, greedy, [0] * len(MICRO_PROMPTS))
    assert b.texts == a.texts and (b.lengths == a.lengths).all()


def first_two_probs(model, tok, prompt):
    """{(t1, t2): p} of the first two sampled tokens at temperature 1, from the model's softmax."""
    ids = tok(prompt)["input_ids"]
    with torch.no_grad():
        p1 = model(torch.tensor([ids])).logits[0, -1].float().softmax(-1)
        batch = torch.tensor([ids + [t] for t in range(len(p1))])
        p2 = model(batch).logits[:, -1].float().softmax(-1)
    return (p1[:, None] * p2).numpy()


def gof_pvalue(probs, pairs):
    """Chi-square goodness of fit of the drawn (t1, t2) pairs to `probs`, cells of expected count
    below 5 pooled into one."""
    counts = np.zeros_like(probs)
    for t1, t2 in pairs:
        counts[t1, t2] += 1
    expected = probs * len(pairs)
    big = expected >= 5
    obs = np.append(counts[big], counts[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


def draws(vl, prompt, temperature):
    ids = vl.tokenizer(prompt)["input_ids"]
    from vllm import SamplingParams as VParams

    sp = VParams(
        n=N_DRAWS, temperature=temperature, max_tokens=2, seed=7, detokenize=False, ignore_eos=True
    )
    (res,) = vl.llm.generate([{"prompt_token_ids": ids}], sp, use_tqdm=False)
    return [tuple(o.token_ids) for o in res.outputs]


def test_samples_follow_the_models_distribution(engines):
    """10,000 draws of the first two tokens at temperature 1 fit the model's own pair probabilities
    (chi-square, p > 1e-4 for each prompt). Power: the same test rejects the engine's draws at
    temperature 0.85, a 15% change of the temperature (p < 1e-4 for each prompt)."""
    model, tok, _, vl = engines
    for prompt in MICRO_PROMPTS[:3]:
        probs = first_two_probs(model, tok, prompt)
        assert gof_pvalue(probs, draws(vl, prompt, 1.0)) > ALPHA, prompt
        assert gof_pvalue(probs, draws(vl, prompt, 0.85)) < ALPHA, prompt


def test_request_seeds_reproduce(engines):
    """The same per-request seeds give the same completions; other seeds give others."""
    *_, vl = engines
    params = SamplingParams(temperature=1.0, max_new_tokens=10)
    seeds = list(range(len(MICRO_PROMPTS)))
    a = vl.sample(MICRO_PROMPTS, 8, params, seeds).texts
    assert vl.sample(MICRO_PROMPTS, 8, params, seeds).texts == a
    assert vl.sample(MICRO_PROMPTS, 8, params, [s + 100 for s in seeds]).texts != a
