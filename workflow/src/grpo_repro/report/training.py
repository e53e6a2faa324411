"""Training curves (Sec. 6; what an RL practitioner reads first): per GRPO run and optimizer step,
the training reward (the binary reward of the sampled groups), the KL estimate to the anchor
(pi_ref, or the previous policy for mirror variants), the policy entropy, the mean completion
length, the share of clipped ratios and the share of groups whose rewards are all equal (no signal),
read from each run's TRL log (results/train/{variant}/seed_{seed}/train_log.csv). Steps where TRL
logs a quantity only at generation time (every mu steps) keep their blanks."""

from __future__ import annotations

import pandas as pd

#: (column of TRL's log, name in the report)
METRICS = (
    ("reward", "reward"),
    ("kl", "kl"),
    ("entropy", "entropy"),
    ("completions/mean_length", "completion_length"),
    ("clip_ratio/region_mean", "clip_ratio"),
    ("frac_reward_zero_std", "groups_without_signal"),
)


def training_frame(logs: dict) -> pd.DataFrame:
    """Long frame variant, seed, step, metric, value from {"<variant>/seed_<seed>": log path}."""
    parts = []
    for run, path in logs.items():
        variant, _, seed = run.partition("/seed_")
        log = pd.read_csv(path)
        log = log[log["step"].notna()].drop_duplicates("step", keep="first")
        for col, name in METRICS:
            if col in log.columns:
                v = log[["step", col]].dropna().rename(columns={col: "value"})
                parts.append(v.assign(variant=variant, seed=int(seed), metric=name))
    cols = ["variant", "seed", "metric", "step", "value"]
    return pd.concat(parts, ignore_index=True)[cols].sort_values(cols[:4], kind="stable")
