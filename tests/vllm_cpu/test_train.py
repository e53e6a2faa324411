"""GRPO training with TRL's colocated vLLM engine on vLLM's CPU backend (grpo_repro.train.vllm_colocate):
the engine samples in the rollout dtype, and after every optimizer step and weight sync its
log-probs are the trainer's (a tolerance the check fails when the sync is skipped); TRL's own
per-parameter sync fails on the CPU backend, which is why the project's is used. And the paper's
vLLM server started by grpo_repro.train.vllm_server.serve on a CPU: /health, generation through TRL's
client, and no process left when the training job is killed with SIGKILL."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest
import torch
from transformers import TrainerCallback

from grpo_repro.train import vllm_colocate
from tests.helpers import ROOT
from tests.helpers.fast_fixtures import build, micro_config
from tests.helpers.tiny_lm import micro_records

TOL = 1e-3  # nats: largest |log p_vLLM - log p_trainer| over a sequence's tokens, float32
PROBE = "Q 1 + 1 - 2 + 3 ?\n #### 3 Q 2 + 1"


def trainer_on_cpu_engine(ref, tmp_path):
    config = micro_config(prompts_per_step=5, G=4, max_len=8, mu=1)
    config["train"].update(use_vllm=True, vllm_mode="colocate", fast_step=False, learning_rate=5e-2)
    config["vllm"]["platform"] = "cpu"
    return build(ref, micro_records(), config, steps=3, work_dir=str(tmp_path), fast=None)


def logp_gap(trainer) -> float:
    """max over PROBE's tokens of |vLLM's prompt log-prob - the trainer's policy's|."""
    from vllm import SamplingParams

    llm = trainer.vllm_generation.llm
    ids = trainer.processing_class(PROBE)["input_ids"]
    sp = SamplingParams(max_tokens=1, prompt_logprobs=0, temperature=1.0)
    (out,) = llm.generate([{"prompt_token_ids": ids}], sp, use_tqdm=False)
    engine = torch.tensor([d[t].logprob for d, t in zip(out.prompt_logprobs[1:], ids[1:])])
    with torch.no_grad():
        logits = trainer.model(torch.tensor([ids])).logits[0, :-1].float()
    policy = logits.log_softmax(-1).gather(-1, torch.tensor(ids[1:])[:, None])[:, 0]
    return float((engine - policy).abs().max())


class Gaps(TrainerCallback):
    """After each optimizer step: sync the weights (as TRL does before its next generation) unless
    `sync` is False, then record the log-prob gap."""

    def __init__(self, trainer, sync):
        self.trainer, self.sync, self.gaps = trainer, sync, []

    def on_step_end(self, args, state, control, **kw):
        if self.sync:
            self.trainer.vllm_generation.sync_weights()
        self.gaps.append(logp_gap(self.trainer))


@pytest.mark.parametrize("sync", [True, False], ids=["synced", "sync_skipped"])
def test_colocate_logps_agree_after_every_sync(ref, tmp_path, sync):
    """Three GRPO steps (learning rate 0.05: the policy moves by nats): the engine holds float32
    weights (the rollout dtype, not vLLM's "auto"); after each step's sync its log-probs are the
    trainer's within TOL. With the sync skipped the same check fails (the gap exceeds 0.1)."""
    trainer = trainer_on_cpu_engine(ref, tmp_path)
    assert trainer.vllm_generation.llm.llm_engine.model_config.dtype == torch.float32
    assert logp_gap(trainer) < TOL
    gaps = Gaps(trainer, sync)
    trainer.add_callback(gaps)
    trainer.train()
    assert len(gaps.gaps) == 3
    if sync:
        assert max(gaps.gaps) < TOL, gaps.gaps
    else:
        assert min(gaps.gaps) > 0.1, gaps.gaps


def test_trls_own_sync_fails_on_the_cpu_backend(ref, tmp_path, monkeypatch):
    """Why the CPU sync exists: TRL's per-parameter load_weights meets the CPU backend's repacked
    weights ('weight_loader'); the project's sync_weights_cpu loads them."""
    from trl.generation.vllm_generation import VLLMGeneration

    monkeypatch.setattr(vllm_colocate, "_cpu_generation_class", lambda: VLLMGeneration)
    trainer = trainer_on_cpu_engine(ref, tmp_path)
    with pytest.raises(AttributeError, match="weight_loader"):
        trainer.vllm_generation.sync_weights()
    vllm_colocate.sync_weights_cpu(trainer.vllm_generation)
    assert logp_gap(trainer) < TOL


JOB = """
import os, sys
from grpo_repro.train import vllm_server
ref, log, url_file = sys.argv[1:4]
cmd = lambda port: vllm_server.server_command(
    ref, port, "float32", max_model_len=256, gpu_memory_utilization=0.3
) + ["--enforce-eager"]
if __name__ == "__main__":
    with vllm_server.serve(ref, "", log, "float32", command=cmd, startup_timeout_s=400) as url:
        open(url_file, "w").write(url)
        import time
        time.sleep(3600)
"""


def test_server_generates_and_dies_with_a_killed_job(ref, tmp_path):
    """A job runs serve() (the real `vllm serve` command TRL builds, on the CPU); the server answers
    /health and generates through TRL's VLLMClient; the job is killed with SIGKILL (no `finally`
    runs) and within 60 s no process of the server is left."""
    from trl.generation.vllm_client import VLLMClient

    url_file, log = tmp_path / "url", tmp_path / "server.log"
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(JOB))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow" / "src")}
    job = subprocess.Popen(
        [sys.executable, str(script), str(ref), str(log), str(url_file)], env=env
    )
    try:
        deadline = time.monotonic() + 420
        while not url_file.exists() or not url_file.read_text():
            assert job.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "no server within 420 s"
            time.sleep(1)
        server = [p for p in psutil.Process(job.pid).children(recursive=True)]
        assert server, "serve() started no process"
        client = VLLMClient(base_url=url_file.read_text(), connection_timeout=30)
        out = client.generate(prompts=["Q 1 + 2 ?\n"], n=2, max_tokens=4, temperature=1.0)
        assert len(out["completion_ids"]) == 2
        client.reset_prefix_cache()
    finally:
        job.send_signal(signal.SIGKILL)
        job.wait()
    gone, alive = psutil.wait_procs(server, timeout=60)
    assert not alive, f"left after the job's SIGKILL: {[p.pid for p in alive]}"
