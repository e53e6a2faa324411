"""Stage train's helpers: pi_ref as a job input, the prompts GRPO trains on, the stage's targets."""

from grpo_repro.train.run_settings import grpo_run


def ref_model_input():
    """pi_ref as a job input: the organism's SFT run, or nothing for a hub id / external path."""
    return [rules.train_reference.output.run] if ORGANISM else []


def grpo_prompts(tree=TREE):
    """The prompts GRPO trains on: the training pool (train.on_pool) or the training split."""
    return tree.data("train_pool" if config["train"]["on_pool"] else "train")


def train_targets():
    ref = list(rules.train_reference.output) if ORGANISM else []
    return ref + [TREE.run_json(r) for r in RUNS]
