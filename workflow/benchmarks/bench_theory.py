"""Benchmark of stage 1 (Sec. 2-5 derivation checks): wall time of the whole stage, as the rule runs it
(a fresh interpreter running workflow/scripts/theory_derivations.py, imports included), plus the
in-process time per check. Target: < 60 s on a 2-core machine.

    python workflow/benchmarks/bench_theory.py [--repeat 1] [--n-random 1000]
"""

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--n-random", type=int, default=1000)
    ap.add_argument("--top", type=int, default=5, help="slowest checks to list")
    a = ap.parse_args()
    walls = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            proc = subprocess.run(
                [
                    sys.executable,
                    str(ROOT / "workflow/scripts/theory_derivations.py"),
                    "--out",
                    tmp,
                    "--n-random",
                    str(a.n_random),
                ],
                capture_output=True,
                text=True,
            )
            walls.append(time.perf_counter() - t0)
            if proc.returncode != 0:
                print(proc.stderr[-2000:], file=sys.stderr)
                return proc.returncode
        import json

        records = json.loads((Path(tmp) / "derivations.json").read_text())
    slow = sorted(records, key=lambda r: -r["seconds"])[: a.top]
    print(
        f"theory stage wall time: {min(walls):.2f} s (best of {a.repeat}; all: "
        f"{', '.join(f'{w:.2f}' for w in walls)}), {len(records)} checks, "
        f"{sum(r['seconds'] for r in records):.2f} s inside the checks; target < 60 s"
    )
    for r in slow:
        print(f"  {r['seconds']:7.3f} s  {r['id']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
