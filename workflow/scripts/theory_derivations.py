"""Rule theory_derivations (stage theory, Sec. 2-5 and App. B-F): sympy/numeric checks of the
derivations -> derivations.json/.md (grpo_repro.theory). Exits 1, naming the failed checks in the
log, if any check of kind `claim` fails. The finite-group checks (docs/theory.md Sec. 8) run at the
pipeline's smoothing eps (train.smoothing_eps). Without Snakemake: `python -m grpo_repro.theory --help`."""

import sys

from grpo_repro import io
from grpo_repro.theory.cli import run_stage


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    t = sm.params.theory
    sys.exit(
        run_stage(
            sm.output.json,
            sm.output.md,
            n_random=int(t["n_random"]),
            tol=float(t["tol"]),
            seed=int(t["seed"]),
            smoothing_eps=float(sm.params.smoothing_eps),
        )
    )


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
