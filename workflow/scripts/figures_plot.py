"""Stage 2 plot step (Fig 1, 2, 4, 5 and beyond): draw one figure family (PNG + PDF) from its CSVs.

Thin wrapper around grpo_repro.plotting.figures.PLOTS[kind]; reads only the rule's CSV inputs
(the `src` inputs are the plotting code, listed so that a restyle reruns the plots).
"""

import sys

from grpo_repro.plotting import figures

sm = snakemake  # noqa: F821 (injected by Snakemake)
with open(sm.log[0], "w") as log:
    sys.stdout = sys.stderr = log
    csvs = {k: v for k, v in sm.input.items() if k != "src"}
    figures.PLOTS[sm.params.kind](csvs, list(sm.output), **dict(sm.params.extra))
    print(f"{sm.params.kind}: wrote {', '.join(sm.output)}")
