"""Benchmark of stage 2 (Fig 1, 2, 4, 5, fixed-point map, bifurcation, variant dynamics, oracle):
wall time of the whole stage run cold, as the workflow runs it (`snakemake -c2 figures_all` in a
fresh temporary directory: every compute and plot job, interpreter start-ups included), plus the
in-process time of each compute and plot function. Target: < 60 s on a 2-core machine.

    python workflow/benchmarks/bench_figures.py [--cores 2] [--skip-snakemake] [--skip-inprocess]
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_snakemake(cores: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("Snakefile", "config", "workflow"):
            os.symlink(ROOT / name, Path(tmp) / name)
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "snakemake", f"-c{cores}", "figures_all"],
            cwd=tmp,
            capture_output=True,
            text=True,
        )
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            print(proc.stderr[-3000:], file=sys.stderr)
            raise SystemExit(proc.returncode)
        n_jobs = len(re.findall(r"^localrule ", proc.stderr, re.M))
        for log in sorted((Path(tmp) / "results/logs/figures").glob("figures_data_*.log")):
            last = log.read_text().strip().splitlines()[-1]
            print(f"    {log.stem:40s} {last}")
    print(f"  snakemake -c{cores} figures_all (cold, {n_jobs} jobs): {wall:.1f} s wall")
    return wall


def run_inprocess() -> float:
    from grpo_repro import config as cfgmod
    from grpo_repro.figures.registry import FAMILIES, resolve

    cfg = cfgmod.load(ROOT / "config" / "config.yaml")["figures"]
    total = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for fam in FAMILIES:
            kind = fam.name
            t0 = time.perf_counter()
            frames = resolve(fam.compute)(cfg)
            paths = {}
            for name, df in frames.items():
                paths[name] = str(Path(tmp) / f"{kind}_{name}.csv")
                df.to_csv(paths[name], index=False)
            t1 = time.perf_counter()
            outs = [
                str(Path(tmp) / f"{s}.{ext}") for s, _ in fam.stems(cfg) for ext in ("png", "pdf")
            ]
            resolve(fam.plot)({k: paths[k] for k in fam.plot_frames()}, outs, **fam.extra(cfg))
            t2 = time.perf_counter()
            total += t2 - t0
            print(f"    {kind:20s} compute {t1 - t0:6.2f} s   plot {t2 - t1:6.2f} s")
    print(f"  in-process, one core: {total:.1f} s (compute + plot, no start-ups)")
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--skip-snakemake", action="store_true")
    ap.add_argument("--skip-inprocess", action="store_true")
    a = ap.parse_args()
    print("stage 2 (figures) benchmark; target < 60 s on 2 cores")
    if not a.skip_inprocess:
        run_inprocess()
    if not a.skip_snakemake:
        wall = run_snakemake(a.cores)
        print(
            f"figures stage wall time: {wall:.1f} s ({'within' if wall < 60 else 'OVER'} the 60 s target)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
