"""The fixed-point test's tabular control (the mechanism "a parametric policy shared across
prompts"): the same sampled GRPO update as training (each group of G whitened by its own mean and
spread, or mean-only for dr_grpo; mu Adam steps on the clipped surrogate; KL(pi || pi_ref), whose
stationary points are k3_ratio's) on a FREE per-prompt policy: two outcomes, success and failure,
one logit per prompt (grpo_repro.dynamics.oracle_sgd), started at each prompt's measured p_ref.

Its plateau (the mean over the second half of the batches) against p*_G says how much of a gap the
update and its sampling noise leave by themselves. Whatever gap the language model shows beyond it
comes from what the tabular policy lacks: a parametric policy over token sequences, shared across
prompts. `logit_sd` is the plateau's fluctuation (the standard deviation of logit p over the
second half), to compare with the trained model's between its last checkpoints (`fluct_var` of
fixed_point.compare).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from grpo_repro.dynamics import oracle_sgd
from grpo_repro.dynamics.oracle import Problem, log_normalise
from grpo_repro.fixed_point.compare import predict


def control(
    ref: pd.DataFrame,
    variant: str,
    beta: float,
    eps: float,
    group_size: int,
    mu: int,
    clip_eps: float | None,
    lr: float,
    n_iter: int,
    seed: int,
) -> pd.DataFrame:
    """Per prompt of pi_ref's table `ref` (prompt_id, p_hat) with 0 < p_ref < 1: p_ref, p*_G, the
    tabular policy's plateau p_tabular and its logit_sd."""
    ref = ref[(ref["p_hat"] > 0) & (ref["p_hat"] < 1)].reset_index(drop=True)
    p_ref = ref["p_hat"].to_numpy(float)
    n = len(p_ref)
    problem = Problem(
        log_normalise(np.log(np.stack([p_ref, 1.0 - p_ref], axis=1))),
        np.tile([1.0, 0.0], (n, 1)),
        np.array(["random"] * n),
    )
    settings = oracle_sgd.SGDSettings(
        variant=variant,
        beta=beta,
        smoothing_eps=eps,
        G=group_size,
        mu=mu,
        lr=lr,
        clip_eps=clip_eps,
        kl="exact",
        optimizer="adam",
        n_iter=n_iter,
        seed=seed,
    )
    tail = oracle_sgd.run(problem, settings)["p"][n_iter // 2 :]
    tail = np.clip(tail, 1e-12, 1 - 1e-12)
    target = predict(variant, p_ref, beta, eps, p_ref, p_ref, group_size=group_size)["p_pred"]
    return pd.DataFrame(
        {
            "prompt_id": ref["prompt_id"],
            "variant": variant,
            "beta": beta,
            "G": group_size,
            "lr": lr,
            "n_iter": n_iter,
            "p_ref": p_ref,
            "p_pred_G": target.to_numpy(),
            "p_tabular": tail.mean(axis=0),
            "logit_sd": np.log(tail / (1 - tail)).std(axis=0),
        }
    )
