"""Shared fixtures: the default configuration and a tiny organism policy built in a temp dir."""

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
from tests.helpers import ROOT

# test files that share a session fixture (the report's workflow copy, tests/workflow/conftest.py)
SHARED = dict.fromkeys(
    [f"tests/workflow/test_{m}.py" for m in ("regeneration", "report_browser", "rerun_scope")],
    "report_workflow",
)


def pytest_xdist_make_scheduler(config, log):
    """The suite runs on two pytest-xdist workers (pyproject.toml addopts). A worker takes a test
    file at a time and runs it in order (its module fixtures are built once; a test may read what
    an earlier one of its file recorded); the files of SHARED go to one worker together, and so do
    the real vLLM engine's (tests/vllm_cpu: one engine at a time)."""
    from xdist.scheduler import LoadScopeScheduling

    class ByFile(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "vllm" if path.startswith("tests/vllm_cpu/") else SHARED.get(path, path)

    return ByFile(config, log)


@pytest.fixture
def default_config():
    from grpo_repro import config as cfg

    return cfg.load(ROOT / "config" / "config.yaml")


@pytest.fixture(scope="session")
def tiny_policy(tmp_path_factory):
    """(model dir, records): a random 2-layer organism policy with its tokenizer and 4 prompts."""
    import torch

    from grpo_repro.data import sets as data
    from grpo_repro.data.organism import TaskSpec, generate
    from grpo_repro.data.prepare import build_tokenizer
    from grpo_repro.models import save_policy
    from grpo_repro.train.sft import build_model

    torch.set_num_threads(1)
    prompt_cfg = {"system": None, "template": "plain", "instruction": "Answer after ####."}
    train = generate({"train": 40, "test": 4}, TaskSpec(1, 2, 9, 99), seed=0)["train"]
    records = data.render(train[:4], prompt_cfg)
    tok = build_tokenizer(
        [r["prompt"] + r["answer"] for r in data.render(train, prompt_cfg)], max_value=99
    )
    model = build_model(
        len(tok), 32, 2, 2, 64, tok.pad_token_id, tok.bos_token_id, tok.eos_token_id
    )
    path = tmp_path_factory.mktemp("tiny") / "ref"
    save_policy(model, tok, path, marker={"tiny": True})
    return path, records


@pytest.fixture(scope="session")
def hub_cache(tmp_path_factory):
    """The rehearsal's stand-in hub cache (tests/helpers/rehearsal.py), built once per session."""
    from tests.helpers import rehearsal

    return rehearsal.build(tmp_path_factory.mktemp("hf_rehearsal") / "hf_home")


@pytest.fixture
def offline_hub(hub_cache, monkeypatch):
    """This process reads the hub from the rehearsal's cache only (HF_HOME), offline."""
    for var in ("HF_HUB_CACHE", "HF_DATASETS_CACHE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HOME", str(hub_cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return hub_cache
