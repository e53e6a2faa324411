"""Checkpoint schedule of GRPO training (Sec. 6): which optimizer steps are saved and evaluated.

One epoch over n prompts at `prompts_per_step` prompts per generation batch, each batch reused for
mu = num_iterations gradient steps (TRL's num_iterations), is ceil(n / prompts_per_step) * mu
optimizer steps (the paper: 7473 / 28 -> 267 batches x 10). Step 0 is pi_ref.
"""

from __future__ import annotations

import math


def total_steps(train: dict, n_prompts: int) -> int:
    """Optimizer steps of the run: train.max_steps, or one epoch when it is null."""
    if train["max_steps"] is not None:
        return int(train["max_steps"])
    return math.ceil(n_prompts / train["prompts_per_step"]) * train["num_iterations"]


def checkpoint_steps(train: dict, n_prompts: int) -> list[int]:
    """[0, save_steps, 2 save_steps, ..., total]: step 0 is pi_ref, the last step is always saved."""
    total = total_steps(train, n_prompts)
    steps = list(range(0, total + 1, train["save_steps"]))
    if steps[-1] != total:
        steps.append(total)
    return steps
