"""Configuration validation and input/output helpers shared by every stage.

The configuration is checked (grpo_repro.config.check: schema + cross-field rules, errors naming
key, file and line) and then validated by Snakemake's validate() against the same JSON schema,
before any job is scheduled.
"""

import sys

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from grpo_repro import config as cfg
from grpo_repro.schedule import checkpoint_steps

try:
    cfg.check(config, workflow.configfiles)
except cfg.ConfigError as err:
    raise WorkflowError(str(err)) from None
validate(config, str(cfg.SCHEMA_PATH))

VARIANTS = list(config["variants"])
RESULTS = "results"
LOGS = "results/logs"


wildcard_constraints:
    variant="|".join(VARIANTS),
    split="test|train",
    step=r"\d+",


def all_targets():
    """Every final artifact of the graph (extended as stages land)."""
    targets = theory_targets()
    return targets


def theory_targets():
    return [f"{RESULTS}/theory/derivations.json", f"{RESULTS}/theory/derivations.md"]
