"""Checkpoint schedule of GRPO training (Sec. 6): which optimizer steps are saved and evaluated.

One epoch over n prompts at `prompts_per_step` prompts per generation batch, each batch reused for
mu = num_iterations gradient steps (TRL's num_iterations), is floor(n / prompts_per_step) * mu
optimizer steps: TRL's RepeatSampler drops the incomplete last batch (the paper: 7473 / 28 -> 266
full batches x 10 = 2660; the paper's "about 267 batches x mu"). Step 0 is pi_ref.
"""

from __future__ import annotations


def total_steps(train: dict, n_prompts: int) -> int:
    """Optimizer steps of the run: train.max_steps, or one epoch when it is null."""
    if train["max_steps"] is not None:
        return int(train["max_steps"])
    if n_prompts < train["prompts_per_step"]:
        raise ValueError(
            f"one epoch needs at least train.prompts_per_step = {train['prompts_per_step']} "
            f"prompts, the training set has {n_prompts}"
        )
    return n_prompts // train["prompts_per_step"] * train["num_iterations"]


def checkpoint_steps(train: dict, n_prompts: int) -> list[int]:
    """[0, save_steps, 2 save_steps, ..., total]: step 0 is pi_ref, the last step is always saved."""
    total = total_steps(train, n_prompts)
    steps = list(range(0, total + 1, train["save_steps"]))
    if steps[-1] != total:
        steps.append(total)
    return steps
