"""Stage 1 (paper Sec. 2-5, App. B-F): sympy/numeric checks of the derivations -> derivations.json/.md.

Thin wrapper around grpo_repro.theory. Under Snakemake (rule theory_derivations) it reads
config["theory"] (n_random, tol, seed) and the rule's outputs and log; without Snakemake it is a CLI:
    python workflow/scripts/theory_derivations.py --out results/theory [--n-random N --tol T --seed S]
Exits 1, naming the failed checks in the log, if any check of kind `claim` fails.
"""

import sys

from grpo_repro.theory.cli import main, run_stage

if "snakemake" in globals():
    cfg = snakemake.config["theory"]  # noqa: F821
    sys.exit(run_stage(snakemake.output.json, snakemake.output.md,  # noqa: F821
                       n_random=int(cfg["n_random"]), tol=float(cfg["tol"]), seed=int(cfg["seed"]),
                       log=snakemake.log[0]))  # noqa: F821
else:
    sys.exit(main(sys.argv[1:]))
