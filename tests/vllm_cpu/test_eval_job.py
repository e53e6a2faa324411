"""An evaluation job on the real vLLM engine (vLLM's CPU backend; grpo_repro.evaluate.job.run_eval_job,
eval.backend: vllm): one engine alive at a time, freed when closed, and tables that agree with the
HF backend's within sampling error. In a module of its own: no other engine is alive meanwhile."""

import gc
import json
import math
import weakref

import pandas as pd
import pytest

from grpo_repro.config import eval_settings
from grpo_repro.evaluate.job import run_eval_job
from grpo_repro.sampler import vllm as vllm_sampler
from tests.helpers.fast_fixtures import eval_tasks, save_micro
from tests.helpers.tiny_lm import micro_records

STEPS = (0, 40)


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    root = tmp_path_factory.mktemp("vllm_job")
    models = {
        s: str(save_micro(root / f"step_{s}", sharpness=1.0 + s / 20, heads=1, arch="llama"))
        for s in STEPS
    }
    data = root / "test.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in micro_records(4)))
    return models, {"test": str(data)}


def evaluate(job, default_config, out, backend):
    models, data = job
    config = json.loads(json.dumps(default_config))
    config["eval"].update(backend=backend, samples=50, max_new_tokens=6)
    config["vllm"]["platform"] = "cpu"
    run_eval_job(
        models,
        eval_tasks(out, STEPS),
        eval_settings(config),
        "ref",
        data,
        progress=False,
        batch_prompts=8,
    )
    return {s: pd.read_csv(out / f"step_{s}.csv") for s in STEPS}


def test_eval_job_one_engine_at_a_time_and_tables_agree_with_hf(
    job, default_config, tmp_path, monkeypatch
):
    """A job of two checkpoints on the vLLM backend: each checkpoint's engine is the only one alive
    while it samples, and is garbage once closed (its memory returned); its tables have the HF
    backend's rows and columns, and each table's mean success is the HF table's within 4 standard
    errors of the difference (20 prompts x 50 samples each)."""
    alive, seen = [], []
    real_init = vllm_sampler.VLLMSampler.__init__

    def tracked_init(self, *args, **kwargs):
        gc.collect()
        seen.append(sum(r() is not None for r in alive))  # engines alive before this one
        real_init(self, *args, **kwargs)
        alive.append(weakref.ref(self.llm))

    monkeypatch.setattr(vllm_sampler.VLLMSampler, "__init__", tracked_init)
    vl = evaluate(job, default_config, tmp_path / "vllm", "vllm")
    gc.collect()
    assert seen == [0, 0] and all(r() is None for r in alive)
    hf = evaluate(job, default_config, tmp_path / "hf", "hf")
    for s in STEPS:
        assert list(vl[s].columns) == list(hf[s].columns)
        assert list(vl[s]["prompt_id"]) == list(hf[s]["prompt_id"])
        a, b = vl[s]["p_hat"], hf[s]["p_hat"]
        se = math.sqrt((a.var() + b.var()) / len(a) + 1e-12)
        assert abs(a.mean() - b.mean()) < 4 * se + 0.02, (s, a.mean(), b.mean())
