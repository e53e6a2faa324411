"""Per-prompt evaluation table of one checkpoint (Sec. 6): successes / samples under the strict
reward (the one GRPO trains on) and the lenient one, with Wilson 95% intervals."""

from __future__ import annotations

from collections import Counter

import pandas as pd

from grpo_repro import reward
from grpo_repro.stats import wilson

#: the per-prompt columns every reader of a table relies on (the report reads these alone)
PROMPT_COLUMNS = (
    "prompt_id",
    "successes",
    "samples",
    "p_hat",
    "ci_low",
    "ci_high",
    "successes_lenient",
    "p_hat_lenient",
)
#: the columns of every evaluation table results/evaluate/{run}/{split}/step_{N}.csv, in order
TABLE_COLUMNS = [
    "variant",
    "seed",
    "split",
    "step",
    *PROMPT_COLUMNS,
    "ci_low_lenient",
    "ci_high_lenient",
    "mean_tokens",
    "truncated",
]


def successes(texts: list[str], gold: str, mode: str) -> int:
    """How many of a prompt's completions `texts` are correct under `mode`: each distinct text
    is scored once and counted with its multiplicity (a prompt's samples repeat, the more so at
    low temperature), the same count as scoring every sample."""
    return sum(n for text, n in Counter(texts).items() if reward.is_correct(text, gold, mode))


def score_chunk(records, out) -> list[dict]:
    """Per-prompt counts of one chunk from a SampleOutput."""
    rows = []
    for i, rec in enumerate(records):
        texts = out.texts[i]
        rows.append(
            {
                "prompt_id": rec["prompt_id"],
                "successes": successes(texts, rec["gold"], "strict"),
                "successes_lenient": successes(texts, rec["gold"], "lenient"),
                "samples": len(texts),
                "tokens": int(out.lengths[i].sum()),
                "truncated": int((~out.finished[i]).sum()),
            }
        )
    return rows


def split_run(run: str) -> tuple[str, int]:
    """("ref", -1) for pi_ref's run "ref"; (variant, GRPO seed) for a run "<variant>/seed_<seed>"."""
    if run == "ref":
        return "ref", -1
    variant, _, seed = run.partition("/seed_")
    if not seed.isdigit():
        raise ValueError(f"run {run!r}: expected 'ref' or '<variant>/seed_<seed>'")
    return variant, int(seed)


def build_table(rows: list[dict], run: str, split: str, step: int) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    k, n = df["successes"].to_numpy(), df["samples"].to_numpy()
    kl = df["successes_lenient"].to_numpy()
    df["p_hat"] = k / n
    df["ci_low"], df["ci_high"] = wilson(k, n)
    df["p_hat_lenient"] = kl / n
    df["ci_low_lenient"], df["ci_high_lenient"] = wilson(kl, n)
    df["mean_tokens"] = df["tokens"] / n
    (df["variant"], df["seed"]), df["split"], df["step"] = split_run(run), split, int(step)
    return df[TABLE_COLUMNS]
