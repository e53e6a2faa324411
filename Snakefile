"""GRPO's effective loss, dynamics and success amplification (Mroueh, arXiv 2503.06639), end to end.

Stages, one rule file and one package subpackage each (README "Layout"): theory (sympy checks of
Sec. 2-5) -> figures (Fig 1, 2, 4, 5 and beyond) -> data (prompt sets) -> train (pi_ref, TRL GRPO,
Sec. 6) -> evaluate (50 samples per question) -> report (trajectories, amplification, summary).
Default: `snakemake -c2` (CPU, offline, minutes). Paper: `--configfile config/paper.yaml`; smoke test:
`--configfile config/paper.yaml config/smoke.yaml` (overlays, merged over config/config.yaml in order).
"""

import os

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version

from grpo_repro.config import ConfigError, load_yaml

min_version("9.0")

# the workflow's own folder: this file's, also where another workflow uses it as a module
ROOT = workflow.current_basedir.get_path_or_uri(secret_free=True)
# the default configuration, found from the workflow (relative to the working directory, which
# `--directory DIR` makes the run's own: its results/, logs and .snakemake/ go there)
DEFAULT_CONFIG = os.path.relpath(os.path.join(ROOT, "config", "config.yaml"))
try:  # a YAML error named with file and line (Snakemake's own message names neither)
    load_yaml(DEFAULT_CONFIG)
except ConfigError as err:
    raise WorkflowError(str(err)) from None


configfile: DEFAULT_CONFIG


include: "workflow/rules/common.smk"
include: "workflow/rules/theory.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/fixed_point.smk"
include: "workflow/rules/fixed_point_compact.smk"


if config["zero"]:  # the zero-success study (null: none)

    include: "workflow/rules/zero.smk"


include: "workflow/rules/report.smk"


if P.organism:  # replicates of the built pi_ref (named target `replicates`)

    include: "workflow/rules/replicates.smk"


# a results tree copied from elsewhere, made with other settings: named now, every rule known
check_copied_tree()


# the landing page, written by the rule report_landing from results/summary.json: the run's own,
# under the working directory (`-d DIR`), where Snakemake would look beside the Snakefile
report: os.path.abspath("results/report/landing.rst")


onstart:
    on_start()


onsuccess:
    on_success()


rule all:
    default_target: True
    input:
        all_targets(),
