"""The named target `replicates` (Thm 1 vs sharpening on other replicates of pi_ref): every
replicate's best-temperature-against-best-temperature rows (grpo_repro.report.temperature) side by
side, as results/replicates/summary.{csv,md}."""

from __future__ import annotations

import pandas as pd

from grpo_repro.cells import points, temperature


def replicate_table(frames: dict[int, pd.DataFrame]) -> pd.DataFrame:
    """The best-vs-best rows (all prompts) of every replicate of pi_ref ({data seed: table}),
    pooled over GRPO seeds and per seed, with the replicate's seed in column `ref_seed`."""
    out = [f[f["klass"] == "all"].assign(ref_seed=int(s)) for s, f in frames.items()]
    df = pd.concat(out, ignore_index=True)
    cols = ["ref_seed", "variant", "seed", "t_variant", "t_ref", "mean_variant", "mean_ref"]
    return df[cols + ["mean_diff", "low", "high", "n_prompts", "selected_on", "n_seeds_above"]]


def replicate_markdown(table: pd.DataFrame) -> str:
    """results/replicates/summary.md: one row per (pi_ref replicate, variant, GRPO seed)."""

    lines = [
        "# Replicates of pi_ref: best temperature against best temperature (held out)",
        "",
        "Each replicate is a data and SFT seed (new problems, SFT data and pi_ref). Best temperatures "
        "are chosen on the split named, the difference is on the held-out split, paired per prompt "
        "(pooled: crossed bootstrap over GRPO seeds and prompts; per seed: paired bootstrap).",
        "",
        "| pi_ref seed | variant | GRPO seed | variant (best T) | pi_ref (best T) | variant - pi_ref [95% CI] |",
        "|---|---|---|---|---|---|",
    ]
    for r in table.to_dict("records"):
        lines.append(
            f"| {r['ref_seed']} | {r['variant']} | {r['seed']} | {100 * r['mean_variant']:.1f}% "
            f"({temperature(r['t_variant'])}) | {100 * r['mean_ref']:.1f}% "
            f"({temperature(r['t_ref'])}) | {points(r['mean_diff'], r['low'], r['high'])} |"
        )
    per_seed = table[table["seed"].astype(str) != "all"]
    n_pos = int((per_seed["low"] > 0).sum())
    lines += [
        "",
        f"Per-seed intervals above 0: {n_pos} of {len(per_seed)} (every GRPO seed of every replicate "
        f"and variant); smallest per-seed difference {100 * per_seed['mean_diff'].min():+.1f} points.",
        "",
    ]
    return "\n".join(lines)
