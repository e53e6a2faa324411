"""GRPO's effective loss, dynamics and success amplification (Mroueh, arXiv 2503.06639), end to end.

Stages: theory (sympy checks of Sec. 2-5) -> figures (Fig 1, 2, 4, 5 and beyond) -> train (TRL GRPO,
Sec. 6) -> evaluate (50 samples per question) -> plots, summary and report.
Default: `snakemake -c2` (CPU, offline, minutes). Paper: `--configfile config/paper.yaml`.
"""

from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/theory.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/plots.smk"


report: "workflow/report/workflow.rst"


onsuccess:
    on_success()


rule all:
    input:
        all_targets(),
    default_target: True
