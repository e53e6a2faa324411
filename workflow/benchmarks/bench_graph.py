"""Benchmark: the default graph cold, per stage, against the machine's ceiling (no timed test).

Runs `snakemake -c<cores>` on a fresh copy of the working tree (or of `--ref` commits, each in
its own clone, one after the other, for side-by-side ratios) and prints, from the runs' Snakemake
benchmark files:

* per stage: jobs, sum of job wall, sum of job CPU, CPU/wall, and the start-up share (jobs x the
  measured cost of a job's start: a Python process importing torch, transformers and grpo_repro,
  over the stage's job wall);
* the achieved FLOP rate of SFT, the GRPO steps and evaluation (2 x parameters x tokens for a
  forward pass, 6 x for forward + backward; tokens from the runs' own records) against the measured
  single-thread fp32 matmul ceiling at the organism's shapes;
* the evaluation stage's sampling seconds per kind of task (at eval.temperature, at the sweep's
  other temperatures) and split, from the tables' metadata;
* the graph's wall time against its lower bound (sum of job CPU / cores).

With --keep DIR, a commit's run that finished there is reused (its wall as measured then), so the
working tree can be rerun beside it; the working tree is always run afresh.

Usage: .venv/bin/python workflow/benchmarks/bench_graph.py [--ref c3e0b3d] [--cores 2]
       [--keep DIR] [--config config/config.yaml]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from graph_files import eval_tasks, flop_rates, jobs, model_params

ROOT = Path(__file__).resolve().parents[2]
#: a finished run's wall seconds, written into its copy (a commit's kept run is reused)
WALL_FILE = "bench_wall.json"
STARTUP = "import torch, transformers, trl, grpo_repro.evaluate.run, grpo_repro.train.grpo"


def checkout(dest: Path, ref: str | None) -> Path:
    """A clean copy of the working tree (ref None) or a clone at `ref`, sharing this .venv."""
    if ref is None:
        files = subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        for f in files:
            if (ROOT / f).is_file():
                (dest / f).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / f, dest / f)
    else:
        subprocess.run(["git", "clone", "-q", str(ROOT), str(dest)], check=True)
        subprocess.run(["git", "checkout", "-q", ref], cwd=dest, check=True)
    (dest / ".venv").symlink_to(ROOT / ".venv")
    return dest


def children_cpu() -> float:
    """CPU seconds (user + system) of this process's finished children and their descendants."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_graph(repo: Path, cores: int, config: str) -> tuple[float, float]:
    """The graph's wall time and the CPU time of Snakemake with every process it started (its
    scheduler, the jobs, their children)."""
    env = {**os.environ, "PYTHONPATH": str(repo / "workflow" / "src")}
    c0, t0 = children_cpu(), time.perf_counter()
    subprocess.run(
        [str(ROOT / ".venv" / "bin" / "snakemake"), f"-c{cores}", "--configfile", config, "-q"],
        cwd=repo,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - t0, children_cpu() - c0


def startup_seconds(repo: Path, n: int = 3) -> float:
    env = {**os.environ, "PYTHONPATH": str(repo / "workflow" / "src")}
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", STARTUP], env=env, check=True)
        best = min(best, time.perf_counter() - t0)
    return best


def matmul_ceiling(hidden: int = 128, ffn: int = 512, rows: int = 4096, reps: int = 50) -> float:
    """Single-thread fp32 GFLOP/s of the organism's MLP matmul (rows x hidden @ hidden x ffn)."""
    import torch

    torch.set_num_threads(1)
    a, b = torch.randn(rows, hidden), torch.randn(hidden, ffn)
    for _ in range(5):
        a @ b
    t0 = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * rows * hidden * ffn * reps / (time.perf_counter() - t0) / 1e9


def report(
    label: str, repo: Path, wall: float, cores: int, startup: float, total: float = float("nan")
) -> dict:
    jb = jobs(repo)
    print(f"\n== {label}: graph wall {wall:.0f} s ({len(jb)} jobs) ==")
    print(
        f"{'stage':12s} {'jobs':>4s} {'wall s':>8s} {'cpu s':>8s} {'cpu/wall':>8s} {'start-up':>8s}"
    )
    print("start-up: jobs x one process importing torch, transformers, trl, grpo_repro / wall")
    print(f"CPU from the jobs' own logs for {(jb['source'] == 'job log').sum()} of {len(jb)} jobs")
    for stage, g in jb.groupby("stage", sort=False):
        w, c = g["wall"].sum(), g["cpu"].sum()
        share = f"{len(g) * startup / w:8.1%}" if stage in ("train", "evaluate") else "     n/a"
        print(f"{stage:12s} {len(g):4d} {w:8.1f} {c:8.1f} {c / w:8.2f} {share}")
    grpo = (jb["stage"] == "train") & ~jb["job"].str.endswith("train_reference")  # GRPO runs
    for name, sub in (("train_grpo", jb[grpo]),):
        if len(sub):
            print(
                f"{name}: cpu/wall {sub['cpu'].sum() / sub['wall'].sum():.2f} over {len(sub)} jobs"
            )
    bound = jb["cpu"].sum() / cores
    print(f"lower bound (job CPU / {cores} cores): {bound:.0f} s; wall / bound {wall / bound:.2f}")
    print(
        f"CPU of the whole run (Snakemake and every process it started): {total:.0f} s, of which "
        f"outside the jobs {total - jb['cpu'].sum():.0f} s; idle {cores * wall - total:.0f} core-s"
    )
    sft = jb[jb["job"].str.endswith("train_reference")]
    if len(sft):
        print(f"critical path: SFT {sft['wall'].sum():.0f} s wall ({sft['cpu'].sum():.0f} s CPU)")
    ev = eval_tasks(repo)
    if len(ev):
        cpu = jb[jb["stage"] == "evaluate"]["cpu"].sum()
        print(f"evaluation tasks (sampling seconds; the rest of the stage's {cpu:.0f} s CPU is")
        print("job start-up, model loads, scoring and writing tables):")
        for r in ev.itertuples():
            print(
                f"  {r.kind:18s} {r.split:5s} {r.tasks:4d} tasks {r.seconds:7.1f} s "
                f"{r.completions / 1e3:7.1f} k completions"
            )
        print(f"  {'all':24s} {ev['tasks'].sum():4d} tasks {ev['seconds'].sum():7.1f} s")
    n = model_params(repo)
    if n:
        for k, v in flop_rates(repo, n, jb).items():
            print(f"achieved {k}: {v:.1f} GFLOP/s per CPU second ({n / 1e6:.2f} M parameters)")
    return {"wall": wall, "jobs": len(jb), "cpu": jb["cpu"].sum()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--ref", action="append", default=[], help="commit run side by side (repeat)")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--config", default="config/config.yaml")
    ap.add_argument("--keep", help="keep the runs' copies under this folder")
    ap.add_argument("--skip-current", action="store_true", help="run only the --ref commits")
    ap.add_argument(
        "--existing", help="report on a finished run in this repository copy (runs nothing)"
    )
    a = ap.parse_args()
    if a.existing:
        repo = Path(a.existing)
        print(
            f"matmul ceiling (1 thread, fp32, 4096x128 @ 128x512): {matmul_ceiling():.1f} GFLOP/s"
        )
        report(str(repo), repo, float("nan"), a.cores, startup_seconds(repo))
        return
    base = Path(a.keep or tempfile.mkdtemp(prefix="bench_graph_"))
    base.mkdir(parents=True, exist_ok=True)
    print(f"matmul ceiling (1 thread, fp32, 4096x128 @ 128x512): {matmul_ceiling():.1f} GFLOP/s")
    results = {}
    for ref in [*a.ref, *([] if a.skip_current else [None])]:
        label = ref or "working tree"
        repo, done = base / (ref or "current"), base / (ref or "current") / WALL_FILE
        if ref and done.exists():  # a commit's finished run kept under --keep: not rerun
            kept = json.loads(done.read_text())
            wall, total = kept["wall"], kept.get("cpu", float("nan"))
            print(f"[{label}] finished run kept in {repo} ({wall:.0f} s when it ran): reused")
        else:
            shutil.rmtree(repo, ignore_errors=True)
            repo = checkout(repo, ref)
            print(f"[{label}] running the graph ...")
            wall, total = run_graph(repo, a.cores, a.config)
            done.write_text(json.dumps({"wall": wall, "cpu": total}))
        results[label] = report(label, repo, wall, a.cores, startup_seconds(repo), total)
    if len(results) > 1:
        cur = results.get("working tree")
        for label, r in results.items():
            if cur and label != "working tree":
                print(
                    f"\nworking tree / {label}: wall ratio {cur['wall'] / r['wall']:.2f} "
                    f"({cur['wall']:.0f} s vs {r['wall']:.0f} s)"
                )
    if not a.keep:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
