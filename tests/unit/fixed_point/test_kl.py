"""The fixed-point study's sequence-level KL (grpo_repro.fixed_point.kl, rule fixed_point_kl): on
the GPU its job holds, its completions scored in chunks whose logits fit a budget, so that at
Qwen2.5-0.5B's 151,936-token vocabulary and the study's sizes its peak memory stays under 8 GB."""

import runpy
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from grpo_repro.fixed_point import kl
from tests.helpers import ROOT
from tests.helpers.tiny_lm import micro_policy

QWEN25_05B_PARAMETERS = 494_032_768  # Qwen2.5-0.5B(-Instruct)'s published count
QWEN25_VOCAB = 151_936
GB = 1e9


@pytest.mark.parametrize("completion_tokens", [200, 400])
def test_peak_memory_at_qwen_vocabulary_and_the_study_sizes_stays_under_8_gb(completion_tokens):
    """The paper's completions (200 tokens, or twice that) after a GSM8K chat prompt (at most 300
    Qwen tokens), fixed_point.kl_samples = 64 completions per prompt: both float32 models and one
    chunk's logits stay under 8 GB; scoring the 64 at once, as before chunking, needs 6x that."""
    width = 300 + completion_tokens
    peak = kl.peak_bytes(QWEN25_05B_PARAMETERS, width, QWEN25_VOCAB)
    assert peak < 8 * GB, peak / GB
    assert kl.chunk_rows(width, QWEN25_VOCAB) < 64
    unchunked = kl.peak_bytes(QWEN25_05B_PARAMETERS, width, QWEN25_VOCAB, budget=10**15)
    assert unchunked > 40 * GB  # 64 rows' logits: the OOM a 32 GB SLURM job met


def test_chunked_scores_equal_the_whole_batch_and_forwards_stay_within_the_chunk():
    model, tok = micro_policy(init_std=0.05)
    prompt = tok("1 + 2 =")["input_ids"]
    rng = np.random.default_rng(0)
    completions = [list(rng.integers(3, len(tok), size=int(n))) for n in rng.integers(1, 6, 9)]
    width = len(prompt) + max(map(len, completions))
    whole = kl.sequence_logps(model, prompt, completions)
    rows_seen = []
    real = model.forward

    def spy(*args, **kwargs):
        rows_seen.append(kwargs["input_ids"].shape[0])
        return real(*args, **kwargs)

    model.forward = spy
    budget = 2 * 2 * width * model.config.vocab_size * kl.FLOAT32  # two completions at a time
    chunked = kl.sequence_logps(model, prompt, completions, budget=budget)
    assert rows_seen == [2, 2, 2, 2, 1]
    np.testing.assert_allclose(chunked, whole, rtol=0, atol=1e-5)


@pytest.mark.parametrize("held, device", [(["3"], "cuda"), ([], "cpu")])
def test_the_job_scores_on_the_device_it_holds(monkeypatch, tmp_path, held, device):
    """The rule's script hands kl_table the job's GPU when gpus.acquire gave it one (the paper's
    graph: 1 GPU), the CPU otherwise."""
    import contextlib

    import pandas as pd

    from grpo_repro import gpus

    seen = {}

    @contextlib.contextmanager
    def acquire(n):
        yield held

    def kl_table(*args, **kwargs):
        seen.update(kwargs)
        return pd.DataFrame({"prompt_id": ["p"], "kl": [0.0]})

    monkeypatch.setattr(gpus, "acquire", acquire)
    monkeypatch.setattr(kl, "kl_table", kl_table)
    monkeypatch.setattr("grpo_repro.data.sets.read_prompts", lambda path: [])
    smk = SimpleNamespace(
        input=SimpleNamespace(pool="pool.jsonl"),
        output=SimpleNamespace(csv=str(tmp_path / "kl.csv")),
        params=SimpleNamespace(
            model="m", ref="r", samples=4, seed=0, max_new_tokens=8, temperature=1.0
        ),
        resources={"gpu": len(held)},
        wildcards=SimpleNamespace(run="grpo_k3_ratio_compact/beta_2/seed_0"),
        threads=1,
        log=[str(tmp_path / "kl.log")],
    )
    monkeypatch.setattr(sys, "argv", ["fixed_point_kl.py"])
    runpy.run_path(
        str(ROOT / "workflow" / "scripts" / "fixed_point_kl.py"),
        init_globals={"snakemake": smk},
        run_name="__main__",
    )
    assert seen["device"] == device
