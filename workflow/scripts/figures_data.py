"""Rule figures_data_<family> (stage figures, Fig 1, 2, 4, 5 and beyond): write the CSV files of one
figure family with its compute function (grpo_repro.figures.registry). Exits 1 if a check of the
finite-policy oracle fails (the failed checks are named in the log)."""

import sys
import time

from grpo_repro import io
from grpo_repro.figures import registry


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    t0 = time.perf_counter()
    frames = registry.run(sm.params.func, dict(sm.params.cfg), dict(sm.output.items()))
    for name, df in frames.items():
        print(f"{name}: {len(df)} rows -> {sm.output[name]}")
    failed = registry.failed_checks(frames)
    for line in failed:
        print(f"FAILED: {line}")
    print(f"{sm.params.func}: {time.perf_counter() - t0:.2f} s")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
