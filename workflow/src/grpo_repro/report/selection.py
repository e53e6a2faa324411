"""How many val samples choosing a temperature needs (the sharpening baseline's best temperature:
grpo_repro.report.temperature.best_temperatures, chosen on val, reported on test).

From val tables of n samples per prompt (pi_ref and every run's final checkpoint at each
temperature of eval.temperatures), `choice_agreement` draws k < n of each prompt's samples without
replacement (hypergeometric: the successes among k of the n recorded draws), chooses each policy's
best temperature as the report does (highest mean success pooled over seeds and prompts; ties: the
higher temperature) and counts how often it is the temperature the n samples choose, and what a
different choice costs in success at the n samples (the regret). Greedy tables (one sample) are
kept as they are.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def best(means: pd.Series) -> float:
    """The temperature of highest mean (ties: the higher temperature), from {temperature: mean}."""
    m = means.sort_index(ascending=False)
    return float(m.idxmax())


def choice_agreement(long: pd.DataFrame, ks, n_resamples: int, seed: int) -> pd.DataFrame:
    """variant, k, agree (fraction of resamples choosing the n-sample temperature), regret (mean over
    resamples of the n-sample success at the n-sample choice minus at the chosen one), chosen (the
    n-sample choice). `long`: rows of grpo_repro.report.temperature.load on one split."""
    rng = np.random.default_rng(seed)
    rows = []
    for variant, g in long.groupby("variant", sort=True):
        full = g.groupby("temperature")["p_hat"].mean()
        want = best(full)
        n, c = g["samples"].to_numpy(), g["successes"].to_numpy()
        sampled = n > 1
        for k in ks:
            if k >= n[sampled].min():
                continue
            picks = []
            for _ in range(n_resamples):
                ck = c.astype(float) / np.maximum(n, 1)
                draws = rng.hypergeometric(c[sampled], n[sampled] - c[sampled], k)
                ck[sampled] = draws / k
                picks.append(best(pd.Series(ck, index=g.index).groupby(g["temperature"]).mean()))
            picks = np.array(picks)
            rows.append(
                {
                    "variant": variant,
                    "k": int(k),
                    "n": int(n[sampled].min()),
                    "chosen": want,
                    "agree": float((picks == want).mean()),
                    "regret": float(np.mean([full[want] - full[p] for p in picks])),
                }
            )
    return pd.DataFrame(rows)
