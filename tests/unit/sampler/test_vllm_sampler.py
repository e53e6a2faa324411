"""The vLLM evaluation backend (config key eval.backend: vllm; grpo_repro.sampler.vllm) on CPU,
against a stand-in engine with vLLM's interface (tests/helpers/vllm_standin.py): the requests it
builds (our tokenizer's ids, one seed per prompt, EOS as stop ids), the mapping of the engine's
results back to prompts (greedy completions and the evaluation table equal the HF sampler's), and
a clear error when results come back out of order, and close() shutting the engine down. The
real engine is checked on a GPU only."""

import numpy as np
import pytest
import torch

from grpo_repro.evaluate.job import make_sampler
from grpo_repro.sampler.hf import HFSampler
from grpo_repro.sampler.params import SamplingParams
from tests.helpers import vllm_standin
from tests.helpers.fast_fixtures import save_micro
from tests.helpers.tiny_lm import MICRO_PROMPTS, micro_records

torch.set_num_threads(1)
GREEDY = SamplingParams(temperature=0.0, max_new_tokens=10)


@pytest.fixture
def vllm(monkeypatch):
    return vllm_standin.install(monkeypatch)


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    return save_micro(tmp_path_factory.mktemp("vllm") / "ref", sharpness=6.0)


def samplers(ckpt, batch_prompts=32):
    from grpo_repro.models import load_policy

    model, tok = load_policy(ckpt)
    hf = HFSampler(model, tok, batch_prompts=batch_prompts)
    vl = make_sampler("vllm", model, tok, model_path=ckpt, batch_prompts=batch_prompts)
    return hf, vl, tok


def test_requests_built_as_vllm_expects(vllm, ckpt):
    """Engine built on the checkpoint directory without its tokenizer; one request per prompt with
    our tokenizer's ids (no padding), n, temperature, top_p, top_k (0 -> vLLM's -1), max_tokens,
    the prompt's seed, the EOS ids as stop ids, no detokenization."""
    hf, vl, tok = samplers(ckpt)
    params = SamplingParams(temperature=0.7, top_p=0.9, top_k=0, max_new_tokens=6)
    seeds = [11, 2**31 + 5, 7]
    vl.sample(MICRO_PROMPTS[:3], 4, params, seeds)
    (llm,) = vllm.LLM.built
    assert llm.kwargs["model"] == str(ckpt) and llm.kwargs["skip_tokenizer_init"] is True
    assert llm.kwargs["trust_remote_code"] is False
    (requests, sps), = llm.requests  # fmt: skip
    assert [r["prompt_token_ids"] for r in requests] == [
        tok(p)["input_ids"] for p in MICRO_PROMPTS[:3]
    ]
    assert [sp.seed for sp in sps] == [11, 5, 7]
    for sp in sps:
        assert (sp.n, sp.temperature, sp.top_p, sp.top_k, sp.max_tokens) == (4, 0.7, 0.9, -1, 6)
        assert sp.stop_token_ids == hf.eos_ids and sp.detokenize is False


def test_greedy_completions_map_back_to_prompts(vllm, ckpt):
    """Greedy decoding: texts, lengths (EOS counted) and finished flags of every prompt equal the HF
    sampler's, prompt by prompt, for prompts of different lengths in one call."""
    hf, vl, _ = samplers(ckpt)
    prompts = MICRO_PROMPTS[::-1] + MICRO_PROMPTS[:2]
    a = hf.sample(prompts, 2, GREEDY, list(range(len(prompts))))
    b = vl.sample(prompts, 2, GREEDY, list(range(len(prompts))))
    assert b.texts == a.texts
    assert np.array_equal(b.lengths, a.lengths) and np.array_equal(b.finished, a.finished)
    assert a.finished.any() and (a.lengths > 1).any()  # EOS-terminated and multi-token completions


def test_seeds_are_per_prompt(vllm, ckpt):
    """A prompt's samples depend on its own seed only: same seeds, same samples; changing prompt 1's
    seed changes prompt 1's samples and leaves prompt 0's."""
    _, vl, _ = samplers(ckpt)
    params = SamplingParams(temperature=1.0, max_new_tokens=8)
    prompts = MICRO_PROMPTS[:2]
    a = vl.sample(prompts, 6, params, [1, 2])
    b = vl.sample(prompts, 6, params, [1, 2])
    c = vl.sample(prompts, 6, params, [1, 3])
    assert a.texts == b.texts
    assert c.texts[0] == a.texts[0] and c.texts[1] != a.texts[1]


def test_out_of_order_results_are_an_error(vllm, ckpt):
    _, vl, _ = samplers(ckpt)
    vllm.LLM.reorder = [1, 0]
    with pytest.raises(RuntimeError, match="result 0 is not prompt 0's"):
        vl.sample(MICRO_PROMPTS[:2], 1, GREEDY, [0, 1])


def test_evaluation_table_equals_hf_backend(vllm, ckpt):
    """evaluate_records through the vLLM backend (greedy, chunks of 2 prompts) writes the HF
    backend's table: the results land on their prompts across chunks."""
    from grpo_repro.evaluate.run import evaluate_records

    hf, vl, _ = samplers(ckpt, batch_prompts=2)
    records = micro_records(2)
    kw = dict(samples=2, params=GREEDY, seed=0, run="grpo/seed_0", step=0, split="test")
    a, _ = evaluate_records(hf, records, progress=False, **kw)
    b, meta = evaluate_records(vl, records, progress=False, **kw)
    assert meta["backend"] == "vllm"
    keep = [c for c in a.columns if "second" not in c and "time" not in c]
    assert a[keep].equals(b[keep])


def test_close_shuts_the_engine_down(vllm, ckpt):
    """close() shuts the engine down (vLLM's llm_engine.engine_core.shutdown()) once; a closed
    sampler samples nothing. The engine is started with the model's dtype by default."""
    _, vl, _ = samplers(ckpt)
    (llm,) = vllm.LLM.built
    assert llm.kwargs["dtype"] == "float32" and vllm.LLM.live == [llm]
    vl.close()
    vl.close()
    assert vllm.LLM.live == [] and llm.model is None
    with pytest.raises(RuntimeError, match="after close"):
        vl.sample(MICRO_PROMPTS[:1], 1, GREEDY, [0])
