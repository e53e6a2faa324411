"""Checkpoint evaluation: reproducible tables, batch-size invariance within sampling noise,
resumption of an interrupted job to the identical table, atomic outputs, and the
evaluate_run script end to end on a tiny organism model."""

import json
import runpy
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

from grpo_repro import io, reward
from grpo_repro.config import eval_settings
from grpo_repro.evaluate import run as ev
from grpo_repro.evaluate import scoring
from grpo_repro.evaluate import tasks as ev_tasks
from grpo_repro.evaluate.scoring import PROMPT_COLUMNS  # what evaluation must write for the report
from grpo_repro.models import model_hash
from grpo_repro.sampler.hf import HFSampler
from grpo_repro.sampler.params import SamplingParams
from tests.helpers.tiny_lm import micro_policy, micro_records

torch.set_num_threads(1)
from tests.helpers import ROOT  # noqa: E402

PARAMS = SamplingParams(temperature=1.0, max_new_tokens=12)


@pytest.fixture(scope="module")
def micro():
    return micro_policy(sharpness=1.0, init_std=0.02)  # broad distributions: successes are frequent


def run(micro, records, batch=2, partial=None, samples=16, params=PARAMS, **kw):
    model, tok = micro
    return ev.evaluate_records(
        HFSampler(model, tok, batch_prompts=batch),
        records,
        samples=samples,
        params=params,
        seed=0,
        run="grpo/seed_0",
        step=60,
        split="test",
        model_sha256="abc",
        partial_path=partial,
        progress=False,
        **kw,
    )


@pytest.mark.parametrize(
    "texts, gold, mode, expected",
    [
        ([], "7", "strict", 0),
        (["#### 7"] * 5, "7", "strict", 5),
        (["#### 7", "#### 8", "#### 7", "so 7", "#### 7"], "7", "strict", 3),
        (["#### 7", "#### 8", "#### 7", "so 7", "#### 7"], "7", "lenient", 4),
        (["3 + 4 = 7 \n #### 7", "3 + 4 = 8 \n #### 8"] * 3, "8", "strict", 3),
    ],
)
def test_successes_counts_each_sample_scoring_each_distinct_text_once(
    texts, gold, mode, expected, monkeypatch
):
    """scoring.successes: the count of correct samples (as scoring every sample gives), with
    reward.is_correct called once per distinct text."""
    naive = sum(reward.is_correct(t, gold, mode) for t in texts)
    calls, real = [], reward.is_correct

    def counted(text, *args):
        calls.append(text)
        return real(text, *args)

    monkeypatch.setattr(reward, "is_correct", counted)
    assert scoring.successes(texts, gold, mode) == naive == expected
    assert sorted(calls) == sorted(set(texts))


def test_table_columns_and_values(micro):
    df, meta = run(micro, micro_records())
    assert list(df.columns[:4]) == ["variant", "seed", "split", "step"]
    assert (df["variant"] == "grpo").all() and (df["seed"] == 0).all()
    assert set(PROMPT_COLUMNS) <= set(df.columns)
    assert (df["samples"] == 16).all()
    assert np.allclose(df["p_hat"], df["successes"] / 16)
    assert (df["ci_low"] <= df["p_hat"]).all() and (df["p_hat"] <= df["ci_high"]).all()
    assert df["successes_lenient"].between(0, 16).all()  # strict and lenient read different numbers
    assert (
        meta["decoding"] == PARAMS.as_dict() and meta["seed"] == 0 and meta["model_sha256"] == "abc"
    )
    assert meta["timing"]["samples_per_s"] > 0 and "torch" in meta["versions"]
    assert meta["mean_p_hat"] == pytest.approx(df["p_hat"].mean())


@pytest.mark.parametrize(
    "split,temperature,val_samples,expected",
    [
        ("test", 1.0, 10, 50),  # the headline split keeps eval.samples
        ("val", 1.0, 10, 10),  # val only chooses the temperature
        ("val", 0.5, None, 50),  # null: eval.samples
        ("val", 0.0, 10, 1),  # greedy: one sample
        ("train", 0.7, 10, 50),
    ],
)
def test_task_samples(split, temperature, val_samples, expected):
    ecfg = {"samples": 50, "val_samples": val_samples}
    assert ev.task_samples(ecfg, split, temperature) == expected


def test_prompts_per_batch_keeps_rows_per_batch():
    """eval.batch_prompts counts prompts of eval.samples draws: greedy tasks batch as many rows."""
    assert ev.prompts_per_batch(32, 50, 50) == 32
    assert ev.prompts_per_batch(32, 50, 1) == 1600  # greedy: one row per prompt
    assert ev.prompts_per_batch(2, 8, 16) == 1  # never below one prompt


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_table_does_not_depend_on_batching(micro, temperature):
    """Per-prompt seeded draws: the same table whatever the prompts per batch (the greedy tasks'
    larger batches of prompts_per_batch change no result)."""
    records = micro_records(5)
    params = SamplingParams(temperature=temperature, max_new_tokens=12)
    tables = []
    for batch in (1, 2, 5):
        df, meta = run(micro, records, batch, samples=1 if temperature == 0 else 8, params=params)
        assert meta["chunk_prompts"] == batch
        tables.append(df)
    for df in tables[1:]:
        pd.testing.assert_frame_equal(tables[0], df)


def test_fixed_seed_reproduces_table(micro, tmp_path):
    records = micro_records(2)
    a, _ = run(micro, records)
    b, _ = run(micro, records)
    pd.testing.assert_frame_equal(a, b)
    io.write_csv(tmp_path / "a.csv", a)
    io.write_csv(tmp_path / "b.csv", b)
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    # another (variant, step) draws other samples
    model, tok = micro
    c, _ = ev.evaluate_records(
        HFSampler(model, tok, batch_prompts=2),
        records,
        samples=16,
        params=PARAMS,
        seed=0,
        run="grpo/seed_0",
        step=120,
        split="test",
        progress=False,
    )
    assert not a["successes_lenient"].equals(c["successes_lenient"])


def test_batch_size_changes_mean_by_less_than_noise(micro):
    records = micro_records(4)  # 20 prompts
    samples = 40
    a, _ = run(micro, records, batch=1, samples=samples)
    b, _ = run(micro, records, batch=7, samples=samples)
    for col in ("p_hat", "p_hat_lenient"):
        pa, pb = a[col].to_numpy(), b[col].to_numpy()
        p = (pa.mean() + pb.mean()) / 2
        noise = np.sqrt(2 * max(p * (1 - p), 1e-3) / (len(records) * samples))
        assert abs(pa.mean() - pb.mean()) <= 3 * noise
    assert a["p_hat_lenient"].mean() > 0.05  # the test is not vacuous


def test_interrupted_run_resumes_to_identical_table(micro, tmp_path):
    records = micro_records(2)  # 10 prompts, chunks of 3 -> 4 chunks
    full, _ = run(micro, records, batch=3)
    partial = tmp_path / "step_60.partial.jsonl"
    assert run(micro, records, batch=3, partial=partial, max_chunks=2) == (None, None)  # "killed"
    lines = partial.read_text().splitlines()
    assert len(lines) == 3 and json.loads(lines[0])["fingerprint"]
    with open(partial, "a") as f:  # a chunk line cut by the kill
        f.write('{"chunk": 2, "rows": [{"prompt_id"')
    resumed, meta = run(micro, records, batch=3, partial=partial)
    assert meta["timing"]["resumed_chunks"] == [0, 1] and meta["timing"]["computed_chunks"] == 2
    pd.testing.assert_frame_equal(full, resumed)
    # a partial file of other settings (here: another model) is ignored, not mixed in
    model, tok = micro
    again, meta = ev.evaluate_records(
        HFSampler(model, tok, batch_prompts=3),
        records,
        samples=16,
        params=PARAMS,
        seed=0,
        run="grpo/seed_0",
        step=60,
        split="test",
        model_sha256="other",
        partial_path=partial,
        progress=False,
    )
    assert meta["timing"]["resumed_chunks"] == []
    pd.testing.assert_frame_equal(full, again)


def test_model_hash(tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"weights-1")
    (tmp_path / "training_args.bin").write_bytes(b"ignored")
    h1 = model_hash(tmp_path)
    (tmp_path / "training_args.bin").write_bytes(b"still ignored")
    assert model_hash(tmp_path) == h1
    (tmp_path / "model.safetensors").write_bytes(b"weights-2")
    assert model_hash(tmp_path) != h1
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError):
        model_hash(tmp_path / "empty")


class Resources(dict):
    """A job's Snakemake `resources`: read by name (resources.batch_prompts) and with .get."""

    __getattr__ = dict.__getitem__


def test_evaluate_run_script_end_to_end(tiny_policy, default_config, tmp_path):
    """The Snakemake script on a tiny random organism model: 3 prompts x 8 samples, both splits,
    pi_ref at the evaluation temperature and at every extra temperature (greedy: one sample)."""
    model_dir, records = tiny_policy
    config = json.loads(json.dumps(default_config))
    config["eval"].update(
        samples=8,
        max_new_tokens=8,
        batch_prompts=2,
        temperatures=[1.0, 0.5, 0],
        temperature_splits=["test"],
    )
    splits = ev_tasks.task_splits(config)
    data = []
    for split in splits:
        path = tmp_path / "data" / f"{split}.jsonl"
        path.parent.mkdir(exist_ok=True)
        path.write_text("".join(json.dumps(r) + "\n" for r in records[:3]))
        data.append(str(path))
    tasks = ev_tasks.tasks(str(tmp_path / "results"), "ref", [0, 40], config)
    assert [(t.step, t.split, t.temperature) for t in tasks] == [
        (0, s, None) for s in config["eval"]["splits"]
    ] + [(0, "test", 0.5), (0, "test", 0.0)]
    log = tmp_path / "logs" / "ref.log"
    log.parent.mkdir()
    smk = SimpleNamespace(
        input=SimpleNamespace(data=data, model=[]),
        params=SimpleNamespace(
            run="ref",
            models={0: str(model_dir)},
            tasks=[t.as_dict() for t in tasks],
            splits=splits,
            settings=eval_settings(config),
        ),
        resources=Resources(batch_prompts=config["eval"]["batch_prompts"]),
        threads=1,
        log=[str(log)],
    )
    runpy.run_path(
        str(ROOT / "workflow" / "scripts" / "evaluate_run.py"),
        init_globals={"snakemake": smk},
        run_name="__main__",  # as Snakemake runs a script: its body is under a main guard
    )
    for task in tasks:
        df = pd.read_csv(task.csv)
        n = 1 if task.temperature == 0 else 8
        assert (
            set(PROMPT_COLUMNS) <= set(df.columns) and len(df) == 3 and (df["samples"] == n).all()
        )
        assert (
            (df["variant"] == "ref").all()
            and (df["step"] == 0).all()
            and (df["split"] == task.split).all()
        )
        meta = json.loads(Path(task.json).read_text())
        assert meta["model_sha256"] == model_hash(model_dir)
        t = config["train"]["temperature"] if task.temperature is None else task.temperature
        assert meta["decoding"]["temperature"] == t  # eval.temperature null: the training one
        assert meta["decoding"]["max_new_tokens"] == 8 and meta["n_prompts"] == 3
        assert not ev.partial_path_for(task.csv).exists()  # removed when the job ends
        assert meta["chunk_prompts"] == (16 if task.temperature == 0 else 2)  # greedy: 2 x 8 rows
    assert "mean p_hat" in log.read_text()


def test_evaluating_pi_ref_by_hub_id_reads_its_cached_snapshot(offline_hub, tmp_path):
    """config/paper.yaml names pi_ref by hub id: its evaluation reads the snapshot at the pinned
    revision from the local cache, offline (the rehearsal's stand-in), and records that snapshot's
    weights hash (the paper's run crashed here when the hash listed a directory named by the id)."""
    from grpo_repro import hub
    from grpo_repro.evaluate.job import run_eval_job
    from tests.helpers import rehearsal

    config = rehearsal.load()
    spec = hub.spec(config["model"])
    data = tmp_path / "test.jsonl"
    records = [{"prompt_id": f"t{i}", "prompt": f"{i} + 1 =", "gold": str(i + 1)} for i in range(3)]
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    config["eval"].update(samples=2, max_new_tokens=4)
    task = {"step": 0, "split": "test", "temperature": None}
    task.update(csv=str(tmp_path / "step_0.csv"), json=str(tmp_path / "step_0.json"))
    settings = eval_settings(config)
    run_eval_job(
        {0: spec}, [task], settings, "ref", {"test": data}, progress=False, batch_prompts=2
    )
    meta = json.loads(Path(task["json"]).read_text())
    assert meta["model_dir"] == spec and meta["n_prompts"] == 3
    assert meta["model_revision"] == config["model"]["revision"]
    assert meta["model_sha256"] == model_hash(hub.local_dir(spec))
    assert hub.local_dir(spec).is_relative_to(offline_hub)
