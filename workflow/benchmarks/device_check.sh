#!/usr/bin/env bash
# The device check in one command, on a machine with one GPU and no network (docs/gpu.md, "The first GPU"):
# installs the carried wheels (envs/device_wheels.txt, fetched beforehand with
# `python workflow/benchmarks/device_wheels.py download .whl`) beside the machine's image, then runs the
# paper-scale benchmark (workflow/benchmarks/gpu_paper_scale.py: every training job's real micro-batch, the
# throughput table the plan reads, peak memory against the memory model, bf16 against fp32 logits at
# temperature 0.1) within 8 minutes; whatever it measured before its time ran out stays in OUT.
#   bash workflow/benchmarks/device_check.sh OUT [benchmark options]
# WHEELS=DIR: the wheels (default .whl; none there: this Python's own packages, as in the slow test on a CPU);
# PYTHON: the interpreter (default python3, the machine's, which holds PyTorch).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: device_check.sh OUT [gpu_paper_scale.py options]}
shift
wheels=${WHEELS:-.whl}
py=${PYTHON:-python3}
site=$(mktemp -d)
if compgen -G "$wheels/*.whl" >/dev/null; then
  "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "$wheels"/*.whl
else
  echo "no wheels in $wheels: the benchmark runs on $py's own packages"
fi
export PYTHONPATH="$site:$PWD/workflow/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1 TRL_EXPERIMENTAL_SILENCE=1
mkdir -p "$out"
"$py" -m pip check >"$out/pip_check.txt" 2>&1 || true  # recorded: the image's versions beside the wheels'
timeout 470 "$py" workflow/benchmarks/gpu_paper_scale.py "$out" --budget-s 400 "$@"
