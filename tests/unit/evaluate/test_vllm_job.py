"""An evaluation job on the vLLM backend (grpo_repro.evaluate.job.run_eval_job, eval.backend: vllm)
against the stand-in engine (tests/helpers/vllm_standin.py): one engine alive at a time over a
job of several checkpoints, each table that of its own checkpoint's weights, the engine started
with the evaluation's dtype; and a job script under vLLM's `spawn` start method, whose engine
child re-imports the script: a script with a main guard runs its body once."""

import json
import os
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from grpo_repro.config import eval_settings
from grpo_repro.evaluate.job import run_eval_job
from tests.helpers import ROOT, vllm_standin
from tests.helpers.fast_fixtures import eval_tasks as tasks
from tests.helpers.fast_fixtures import save_micro
from tests.helpers.tiny_lm import micro_records

STEPS = (0, 40, 80)


@pytest.fixture
def vllm(monkeypatch):
    return vllm_standin.install(monkeypatch)


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """Three checkpoints of different weights and a prompt set of the micro policy's prompts."""
    root = tmp_path_factory.mktemp("vllm_job")
    models = {s: str(save_micro(root / f"step_{s}", sharpness=1.0 + s / 20)) for s in STEPS}
    data = root / "test.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in micro_records(1)))
    return models, {"test": str(data)}


def settings(default_config, **ev):
    config = json.loads(json.dumps(default_config))
    config["eval"].update(backend="vllm", samples=4, max_new_tokens=6, **ev)
    return eval_settings(config)


def evaluate(job, default_config, out, steps=STEPS, **ev):
    models, data = job
    run_eval_job(
        {s: models[s] for s in steps},
        tasks(out, steps),
        settings(default_config, **ev),
        "ref",
        data,
        progress=False,
        batch_prompts=5,
    )
    return {s: pd.read_csv(out / f"step_{s}.csv") for s in steps}


def test_one_engine_alive_at_a_time(vllm, job, default_config, tmp_path):
    """A job of 3 checkpoints builds an engine per checkpoint on its directory, and shuts each
    down before the next is built; none is left alive when the job ends."""
    evaluate(job, default_config, tmp_path)
    assert [llm.kwargs["model"] for llm in vllm.LLM.built] == [job[0][s] for s in STEPS]
    assert vllm.LLM.most_live == 1 and vllm.LLM.live == []


def test_each_table_is_its_checkpoints(vllm, job, default_config, tmp_path):
    """The tables of a job of 3 checkpoints equal those of 3 jobs of one checkpoint each (and the
    checkpoints' tables differ: each was sampled from its own weights)."""
    together = evaluate(job, default_config, tmp_path / "together")
    for s in STEPS:
        alone = evaluate(job, default_config, tmp_path / f"alone_{s}", steps=(s,))
        pd.testing.assert_frame_equal(together[s], alone[s])
    tables = [together[s].drop(columns="step") for s in STEPS]
    assert not tables[0].equals(tables[1]) and not tables[1].equals(tables[2])


@pytest.mark.parametrize("choice, dtype", [("rollout", "float32"), ("bfloat16", "bfloat16")])
def test_engine_dtype_and_recorded_precision(vllm, job, default_config, tmp_path, choice, dtype):
    """vLLM's engine is started with eval.dtype's dtype (rollout: training's rollout dtype,
    float32 with train.use_vllm false), and the table's metadata records it, without autocast."""
    evaluate(job, default_config, tmp_path, steps=(0,), dtype=choice)
    assert vllm.LLM.built[0].kwargs["dtype"] == dtype
    meta = json.loads((tmp_path / "step_0.json").read_text())
    assert meta["precision"] == {
        "dtype": dtype,
        "backend": "vllm",
        "autocast": False,
        "eval.dtype": choice,
    }


SCRIPT = """\
import json
import sys

from grpo_repro.evaluate.job import run_eval_job
from tests.helpers import vllm_standin

"""
BODY = """\
with open(sys.argv[1], "a") as counter:
    counter.write("body ran\\n")
sys.modules["vllm"] = vllm_standin.module()
vllm_standin.LLM.spawn = True  # vLLM's engine core in a spawned child
job = json.loads(sys.argv[2])
run_eval_job({int(k): v for k, v in job["models"].items()}, *job["args"], batch_prompts=5)
"""


def run_script(path, guarded: bool, job, default_config, out):
    """Run a job script (the body under `if __name__ == "__main__":` when `guarded`) as Snakemake
    runs a `script:` (python FILE); (its completed process, how many times its body ran)."""
    models, data = job
    body = "if __name__ == '__main__':\n" + textwrap.indent(BODY, "    ") if guarded else BODY
    path.write_text(SCRIPT + body)
    args = [tasks(out, (0,)), settings(default_config), "ref", data]
    spec = json.dumps({"models": {0: models[0]}, "args": args})
    counter = out / "counter.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, str(path), str(counter), spec],
        capture_output=True,
        text=True,
        env=env,
        cwd=out,
        timeout=150,
    )
    return proc, len(counter.read_text().splitlines())


def test_a_guarded_script_runs_once_under_spawn(job, default_config, tmp_path):
    proc, runs = run_script(tmp_path / "job.py", True, job, default_config, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert runs == 1 and (tmp_path / "step_0.csv").exists()


@pytest.mark.slow  # a spawned engine child that reruns the whole job (about 16 s)
def test_an_unguarded_script_runs_again_in_the_engine_child(job, default_config, tmp_path):
    """What the guard prevents: the spawned child re-imports the script and runs its body again
    (and its own engine start fails there, so the job fails)."""
    proc, runs = run_script(tmp_path / "job.py", False, job, default_config, tmp_path)
    assert runs == 2
    assert proc.returncode != 0 and "Engine core initialization failed" in proc.stderr
