"""Fault tolerance and determinism check of the whole graph (kill anywhere, rerun, same results).

Runs the default configuration (shrunk by --scale small so that it takes minutes) twice, cold, in
two fresh copies of the workflow:
  run A: uninterrupted, in the checkout's results/;
  run B: in a run directory of its own (`-d runs/killed`), killed with SIGKILL (the whole process
         group) once during GRPO training, after its first resumable checkpoint, and once during
         checkpoint evaluation, after its first finished chunk; each time resumed with the
         documented steps (README, docs/troubleshooting.md): the same command with --unlock (a
         hard kill leaves Snakemake's lock), then the same command (profiles/default:
         rerun-incomplete), both with its `-d`.
Then it checks that every file of run B is described by its stage's PROVENANCE.json, with the
rule that made it (also the files whose jobs ran in a killed invocation), and compares, byte for
byte, every evaluation table (results/evaluate/**/*.csv), every figure data file
(results/figures/*.csv) and every table of the compact fixed-point study (its evaluations, KL and
data; not its training log, which holds timings) of A and B, and prints what it compared and how
much work the reruns redid. Exit status 0 iff everything matched.

Usage: python workflow/checks/fault_tolerance.py [--scale small|full] [--keep DIR]
"""

from __future__ import annotations

import argparse
import filecmp
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SMALL = {  # the default configuration, shrunk: same code paths, fewer steps, prompts, seeds, points
    # two variants holding all four behaviours: pi_ref anchor with whitening (grpo), previous-policy
    # anchor with mean-only advantage (mirror_dr)
    "variants": ["grpo", "mirror_dr"],
    "organism": {"sft_steps": 60, "n_sft": 1000},
    "figures": {  # the grids of the figures' maps and the oracle's sweeps
        "map_beta": {"lo": 0.5, "hi": 5.0, "n": 4},
        "map_p_ref": {"lo": 0.001, "hi": 0.5, "n": 4},
        "bif_beta": {"lo": 1.0, "hi": 6.0, "n": 20},
        "p_star_g_p_ref": {"lo": 0.05, "hi": 0.8, "n": 5},
        "oracle": {
            "n_prompts": 4,
            "n_iter": 4,
            "n_iter_optimiser": 2,
            "sgd": {
                "seeds": [0],
                "sweep_group_size": [4],
                "sweep_mu": [1],
                "sweep_clip_eps": [],
                "sweep_kl": [],
            },
        },
    },
    "report": {"n_bootstrap": 100},
    "data": {"n_train": 64, "n_val": 16, "n_test": 24, "train_pool": 16},
    "train": {"max_steps": 12, "save_steps": 4, "seeds": [0]},
    "eval": {"samples": 8, "val_samples": 4},
    "fixed_point": {  # the compact study (in the default target): 8 prompts, 2 checkpoints
        "n_prompts": 8,  # <= data.train_pool
        "ref_samples": 64,
        "kl_samples": 8,
        "compact": {
            "max_steps": 16,
            "save_steps": 8,
            "samples": 32,
            "resample": {"samples": [8, 16], "prompts": [4]},
        },
    },
    "zero": {
        "samples": 32,
        "extra_held_out": 40,
    },  # the zero-success study: fewer problems, samples
}


def copy_workflow(dest: Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for rel in files:
        if rel.startswith(("results/", "tests/")):
            continue
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def command(extra_config: Path | None, directory: str | None = None) -> list[str]:
    # the README's command (with the run's -d); profiles/default (rerun-incomplete) makes it
    # resume after a kill
    cmd = [sys.executable, "-m", "snakemake", "-c2", *(["-d", directory] if directory else [])]
    if extra_config:
        cmd += ["--configfile", "config/config.yaml", str(extra_config)]
    return cmd


def start(workdir: Path, cmd: list[str], log: Path) -> subprocess.Popen:
    """Start the run in its own process group; first the documented step after a hard kill: the
    same command with --unlock releases the lock the killed run left behind."""
    subprocess.run(
        cmd + ["--unlock"],
        cwd=workdir,
        stdout=open(log, "a"),
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        check=True,
    )
    return subprocess.Popen(
        cmd,
        cwd=workdir,
        stdout=open(log, "a"),
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


def kill_when(proc: subprocess.Popen, ready, what: str, timeout: float = 3600) -> str:
    """SIGKILL the whole process group as soon as ready() returns a description."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        found = ready()
        if found:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return found
        if proc.poll() is not None:
            raise RuntimeError(f"the run ended before it could be killed {what}")
        time.sleep(0.2)
    raise TimeoutError(f"nothing to kill {what} after {timeout} s")


def training_checkpoint(workdir: Path):
    done = glob.glob(str(workdir / "results/train/*/seed_*/work/checkpoint-*/rng_state.pth"))
    return (
        done and f"during training, after {Path(done[0]).parent.relative_to(workdir)} was written"
    )


def eval_chunk(workdir: Path):
    for p in glob.glob(str(workdir / "results/evaluate/**/*.partial.jsonl"), recursive=True):
        if sum(1 for _ in open(p)) >= 2:  # fingerprint line + at least one finished chunk
            return (
                f"during evaluation, with {Path(p).relative_to(workdir)} holding a finished chunk"
            )
    return None


def compare(a: Path, b: Path) -> tuple[list[str], list[str]]:
    rels = sorted(
        {
            str(Path(p).relative_to(a))
            for pat in (
                "results/evaluate/**/*.csv",
                "results/figures/*.csv",
                "results/fixed_point/evaluate/**/*.csv",
                "results/fixed_point/kl/*/*/*.csv",
                "results/fixed_point/compact/data/*.csv",
                "results/zero/data/*.csv",
            )
            for p in glob.glob(str(a / pat), recursive=True)
        }
    )
    same = [r for r in rels if (b / r).exists() and filecmp.cmp(a / r, b / r, shallow=False)]
    return same, [r for r in rels if r not in same]


def unrecorded(workdir: Path) -> list[str]:
    """The files of each stage folder that its PROVENANCE.json has no entry for, naming the rule
    that made them (grpo_repro.provenance.write_stage_provenance, after the last, successful run)."""
    sys.path.insert(0, str(ROOT / "workflow" / "src"))
    from grpo_repro.provenance import STAGE_DIRS, stage_files

    out = []
    for stage in STAGE_DIRS:
        d = workdir / "results" / stage
        if not d.is_dir():
            continue
        prov = d / "PROVENANCE.json"
        files = json.load(open(prov))["files"] if prov.is_file() else {}
        out += [
            str(f.relative_to(workdir))
            for f in stage_files(d)
            if not files.get(str(f.relative_to(d)), {}).get("rule")
        ]
    return out


def redone(workdir: Path) -> list[str]:
    out = []
    for run in sorted(glob.glob(str(workdir / "results/train/*/seed_*/run.json"))):
        info = json.load(open(run))
        name = Path(run).parent.relative_to(workdir / "results/train")
        out.append(f"train {name}: resumed from {info.get('resumed_from') or 'the start'}")
    for meta in sorted(glob.glob(str(workdir / "results/evaluate/**/*.json"), recursive=True)):
        timing = json.load(open(meta)).get("timing", {})
        if timing.get("resumed_chunks"):
            out.append(
                f"eval {Path(meta).relative_to(workdir)}: {len(timing['resumed_chunks'])} finished "
                f"chunk(s) reused, {timing.get('computed_chunks')} computed"
            )
    return out


def zero_study_missing(root: Path) -> str | None:
    """The summary file or landing page of a finished default run without the zero-success
    study's result (grpo_repro.zero: its section and its line), else None."""
    for rel, mark in (
        ("results/summary.md", "## Zero-success prompts"),
        ("results/summary.json", '"predicted_left_zero": 0'),
        ("results/report/landing.rst", "**Can GRPO create successes?"),
    ):
        path = root / rel
        if not path.exists() or mark not in path.read_text():
            return rel
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", choices=["small", "full"], default="small")
    ap.add_argument("--keep", help="directory to keep the two runs in (default: a temporary one)")
    a = ap.parse_args()
    base = Path(a.keep or tempfile.mkdtemp(prefix="fault_tolerance_"))
    base.mkdir(parents=True, exist_ok=True)
    runs = {}
    for name, directory in (("A", None), ("B", "runs/killed")):
        wd = base / name
        shutil.rmtree(wd, ignore_errors=True)
        copy_workflow(wd)
        extra = None
        if a.scale == "small":
            extra = wd / "config" / "fault_tolerance_small.yaml"
            extra.write_text(yaml.safe_dump(SMALL))
        # the run's results/ lives under its directory (the checkout's for run A)
        root = wd / directory if directory else wd
        runs[name] = (wd, command(extra, directory), wd / "run.log", root)
    env_note = f"scale={a.scale}, workdirs under {base}"
    print(f"fault tolerance check ({env_note})", flush=True)

    wd, cmd, log, _ = runs["A"]
    t0 = time.time()
    if start(wd, cmd, log).wait() != 0:
        print(f"run A failed: see {log}")
        return 1
    print(f"run A (uninterrupted, cold): {time.time() - t0:.0f} s", flush=True)
    missing = zero_study_missing(wd)
    if missing:  # `snakemake -c2` writes the zero-success result into the summary and landing page
        print(f"run A's {missing} lacks the zero-success study")
        return 1

    wd, cmd, log, root = runs["B"]
    t0 = time.time()
    kills = [
        kill_when(start(wd, cmd, log), lambda: training_checkpoint(root), "during training"),
        kill_when(start(wd, cmd, log), lambda: eval_chunk(root), "during evaluation"),
    ]
    for k in kills:
        print(f"run B: killed -9 {k}", flush=True)
    if start(wd, cmd, log).wait() != 0:
        print(f"run B's final rerun failed: see {log}")
        return 1
    print(
        f"run B (killed twice, rerun with --rerun-incomplete): {time.time() - t0:.0f} s", flush=True
    )
    for line in redone(root):
        print(f"  {line}")
    if (wd / "results").exists():
        print("run B wrote into the checkout's results/, not its run directory")
        return 1

    lost = unrecorded(root)
    if lost:
        print("files of run B that no PROVENANCE.json describes (made by the killed runs' jobs):")
        print("\n".join(f"  {r}" for r in lost[:10]))
        return 1
    same, diff = compare(runs["A"][3], runs["B"][3])
    print(
        f"compared {len(same) + len(diff)} files byte for byte (evaluation tables, figure data, fixed-point tables): "
        f"{len(same)} identical, {len(diff)} different"
    )
    for r in diff:
        print(f"  DIFFERENT: {r}")
    if not same:
        print("nothing was compared")
        return 1
    return 0 if not diff else 1


if __name__ == "__main__":
    sys.exit(main())
