"""Stage 2 compute step (Fig 1, 2, 4, 5 and beyond): write the CSV files of one figure family.

Thin wrapper around grpo_repro.figure_data.run(kind, cfg, outputs); under Snakemake the rule gives
params.kind, params.cfg (its keys of the `figures:` section) and named outputs. Exits 1 if a check
of the finite-policy oracle fails (the checks are logged and kept in the log).
"""

import sys
import time

from grpo_repro import figure_data

sm = snakemake  # noqa: F821 (injected by Snakemake)
with open(sm.log[0], "w") as log:
    sys.stdout = sys.stderr = log
    t0 = time.perf_counter()
    frames = figure_data.run(sm.params.kind, dict(sm.params.cfg), dict(sm.output.items()))
    for name, df in frames.items():
        print(f"{name}: {len(df)} rows -> {sm.output[name]}")
    failed = figure_data.failed_checks(frames)
    for line in failed:
        print(f"FAILED: {line}")
    print(f"{sm.params.kind}: {time.perf_counter() - t0:.2f} s")
    log.flush()
    if failed:
        sys.exit(1)
