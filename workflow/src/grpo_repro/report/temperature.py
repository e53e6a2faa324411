"""Amplification against sharpening (Thm 1: GRPO's optimum tilts pi_ref by exp(A / beta), which can
raise success where pi_ref's most likely answer is wrong; lowering pi_ref's sampling temperature only
sharpens pi_ref and lowers success there).

From the tables of pi_ref (step 0) and every run's final checkpoint at each temperature of
eval.temperatures (grpo_repro.evaluate.tasks):

* `temperature_curve`: mean success per (variant, seed, split, temperature, problem class) with a
  95% interval (pooled over seeds: crossed bootstrap over seeds and prompts; per seed: bootstrap
  over prompts). Classes: `all`, and for the organism `misconception` (problems with a step the
  SFT teacher misreads, grpo_repro.data.organism.MISCONCEPTION) and `other`.
* `best_vs_best`: each policy's best temperature is chosen on the validation split (when it was
  evaluated at the temperatures; else on the split itself, flagged) and the headline split compares
  a variant at its best temperature with pi_ref at ITS best: paired per prompt, pooled over seeds
  (crossed bootstrap) and per seed (paired bootstrap over prompts).
* `pass_at_k`: the unbiased pass@k of Chen et al. (2021), 1 - C(n - c, k) / C(n, k), per prompt
  from its n samples and c successes, k = 1 .. n, averaged over prompts with a 95% interval.

How many val samples choosing a temperature needs (`best_temperatures`: chosen on val, reported
on test).

From val tables of n samples per prompt (pi_ref and every run's final checkpoint at each
temperature of eval.temperatures), `choice_agreement` draws k < n of each prompt's samples without
replacement (hypergeometric: the successes among k of the n recorded draws), chooses each policy's
best temperature as the report does (highest mean success pooled over seeds and prompts; ties: the
higher temperature) and counts how often it is the temperature the n samples choose, and what a
different choice costs in success at the n samples (the regret). Greedy tables (one sample) are
kept as they are.

The named target `replicates` (Thm 1 vs sharpening on other replicates of pi_ref):
`replicate_table` sets every replicate's best-temperature-against-best-temperature rows side by
side, as results/replicates/summary.{csv,md}.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from grpo_repro import stats
from grpo_repro.cells import points, temperature
from grpo_repro.evaluate.tasks import temperatures
from grpo_repro.report.amplification import ALL, boot_seed, seed_prompt_matrix
from grpo_repro.report.tables import read_eval_table
from grpo_repro.runs import REF, Tree, run_name

CLASSES = ("all", "misconception", "other")


def entries(results: str, variants, seeds, steps, config: dict) -> list[dict]:
    """(variant, seed, split, step, temperature, path) of every table at the temperatures: pi_ref
    (seed -1, step 0) and each run's final step, on every split of eval.temperature_splits."""
    temps = temperatures(config)
    if len(temps) < 2:
        return []
    final = max(int(s) for s in steps)
    out, tree = [], Tree(results)
    for split in config["eval"]["temperature_splits"]:
        runs = [(REF, -1, 0)] + [(v, int(s), final) for v in variants for s in seeds]
        for variant, seed, step in runs:
            run = REF if variant == REF else run_name(variant, seed)
            for i, t in enumerate(temps):
                path = tree.table(run, split, step, "csv", None if i == 0 else t)
                out.append(
                    {
                        "variant": variant,
                        "seed": seed,
                        "split": split,
                        "step": step,
                        "temperature": t,
                        "path": path,
                    }
                )
    return out


def load(entries: list[dict], classes: dict[str, set]) -> pd.DataFrame:
    """One row per (variant, seed, split, temperature, prompt): samples, successes, p_hat, and
    `klass` (misconception / other, or `all` when the split has no class tags). `classes`:
    {split: prompt ids of the misconception class} (absent split: no tags)."""
    frames = []
    for e in entries:
        df = read_eval_table(e["path"])[["prompt_id", "samples", "successes", "p_hat"]]
        df = df.assign(
            variant=e["variant"],
            seed=int(e["seed"]),
            split=e["split"],
            temperature=e["temperature"],
        )
        tagged = classes.get(e["split"])
        if tagged is None:
            df["klass"] = "all"
        else:
            df["klass"] = np.where(df["prompt_id"].isin(tagged), "misconception", "other")
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def _subsets(frame: pd.DataFrame):
    """(class, rows): every prompt, then each tagged class present."""
    yield "all", frame
    for k in ("misconception", "other"):
        if (frame["klass"] == k).any():
            yield k, frame[frame["klass"] == k]


def temperature_curve(long: pd.DataFrame, n_boot: int, seed: int) -> pd.DataFrame:
    """variant, seed, split, klass, temperature, n_prompts, mean, low, high."""
    rows = []
    for (variant, split, t), g in long.groupby(["variant", "split", "temperature"], sort=True):
        for klass, h in _subsets(g):
            s = boot_seed(seed, "temperature", split, variant, f"{t:g}", klass)
            base = {"variant": variant, "split": split, "klass": klass, "temperature": t}
            base["n_prompts"] = h["prompt_id"].nunique()
            m, lo, hi = stats.crossed_bootstrap_ci(
                seed_prompt_matrix(h, "p_hat"), n_boot=n_boot, seed=s
            )
            rows.append({**base, "seed": ALL, "mean": m, "low": lo, "high": hi})
            if variant == REF:
                continue
            for sd, q in h.groupby("seed", sort=True):
                m, lo, hi = stats.bootstrap_mean_ci(q["p_hat"].to_numpy(), n_boot=n_boot, seed=s)
                rows.append({**base, "seed": str(sd), "mean": m, "low": lo, "high": hi})
    cols = ["variant", "seed", "split", "klass", "temperature", "n_prompts", "mean", "low", "high"]
    return pd.DataFrame(rows, columns=cols)


def best_temperatures(curve: pd.DataFrame, select_split: str) -> dict[str, float]:
    """{variant: the temperature of highest mean success on `select_split` (pooled over seeds;
    ties: the higher temperature)}."""
    c = curve[(curve["split"] == select_split) & (curve["seed"] == ALL) & (curve["klass"] == "all")]
    return {v: best(g.set_index("temperature")["mean"]) for v, g in c.groupby("variant", sort=True)}


def best_vs_best(
    long: pd.DataFrame, curve: pd.DataFrame, split: str, n_boot: int, seed: int
) -> pd.DataFrame:
    """Per variant (pooled over seeds, and per seed) and class: the variant at its best
    temperature against pi_ref at its best, on `split`, paired per prompt. Best temperatures are
    chosen on val when val was evaluated at the temperatures, else on `split` itself."""
    select = "val" if (curve["split"] == "val").any() else split
    best = best_temperatures(curve, select)
    t_ref = best[REF]
    on = long[long["split"] == split]
    ref = on[(on["variant"] == REF) & (on["temperature"] == t_ref)].set_index("prompt_id")
    rows = []
    for variant in sorted(v for v in best if v != REF):
        t_v = best[variant]
        g = on[(on["variant"] == variant) & (on["temperature"] == t_v)].copy()
        g["p_ref"] = ref.loc[g["prompt_id"], "p_hat"].to_numpy()
        g["diff"] = g["p_hat"] - g["p_ref"]
        for klass, h in _subsets(g):
            s = boot_seed(seed, "best", split, variant, klass)
            base = {
                "variant": variant,
                "split": split,
                "klass": klass,
                "selected_on": select,
                "t_variant": t_v,
                "t_ref": t_ref,
                "n_prompts": h["prompt_id"].nunique(),
                "mean_ref": float(h.groupby("prompt_id")["p_ref"].first().mean()),
            }
            m, lo, hi = stats.crossed_bootstrap_ci(
                seed_prompt_matrix(h, "diff"), n_boot=n_boot, seed=s
            )
            pooled = {
                **base,
                "seed": ALL,
                "mean_variant": float(h["p_hat"].mean()),
                "mean_diff": m,
                "low": lo,
                "high": hi,
                "n_seeds": h["seed"].nunique(),
                "n_seeds_above": 0,  # seeds whose own paired interval lies above 0 (below)
            }
            rows.append(pooled)
            for sd, q in h.groupby("seed", sort=True):
                diff = q["p_hat"].to_numpy() - q["p_ref"].to_numpy()  # paired over prompts
                m, lo, hi = stats.bootstrap_mean_ci(diff, n_boot=n_boot, seed=s)
                rows.append(
                    {
                        **base,
                        "seed": str(sd),
                        "mean_variant": float(q["p_hat"].mean()),
                        "mean_diff": m,
                        "low": lo,
                        "high": hi,
                        "n_seeds": 1,
                        "n_seeds_above": int(lo > 0),
                    }
                )
                pooled["n_seeds_above"] += int(lo > 0)
    return pd.DataFrame(rows)


def _crossed_counts(s: int, p: int, n_boot: int, seed: int):
    """The resampling counts of stats.crossed_bootstrap_ci's draws: (n_boot, s) seed counts and
    (n_boot, p) prompt counts, so that one set of draws serves many matrices at once."""
    rng = np.random.default_rng(seed)
    rows, cols = np.zeros((n_boot, s)), np.zeros((n_boot, p))
    for b in range(n_boot):
        r = rng.integers(0, s, size=s) if s > 1 else np.zeros(1, int)
        np.add.at(rows[b], r, 1)
        np.add.at(cols[b], rng.integers(0, p, size=p), 1)
    return rows, cols


def pass_at_k(long: pd.DataFrame, n_boot: int, seed: int) -> pd.DataFrame:
    """variant, seed (pooled: all), split, temperature, k, n_prompts, mean, low, high: pass@k for
    k = 1 .. samples at every temperature with more than one sample (greedy has one); the 95%
    interval resamples seeds and prompts (crossed bootstrap, one set of draws for every k)."""
    rows = []
    for (variant, split, t), g in long.groupby(["variant", "split", "temperature"], sort=True):
        n = int(g["samples"].min())
        if n < 2 or (g["samples"] != n).any():
            continue
        wide = g.pivot_table(index="seed", columns="prompt_id", values="successes")
        c = wide.to_numpy()
        r, q = _crossed_counts(
            *c.shape, n_boot, boot_seed(seed, "pass_at_k", split, variant, f"{t:g}")
        )
        for k in range(1, n + 1):
            x = stats.pass_at_k(np.full(c.shape, n), c, k)
            means = np.einsum("bp,bp->b", r @ x, q) / x.size
            lo, hi = np.quantile(means, [0.025, 0.975])
            rows.append(
                {
                    "variant": variant,
                    "seed": ALL,
                    "split": split,
                    "temperature": t,
                    "k": k,
                    "n_prompts": c.shape[1],
                    "mean": float(x.mean()),
                    "low": float(lo),
                    "high": float(hi),
                }
            )
    return pd.DataFrame(rows)


def verdict(row: dict, t_main: float) -> str:
    """One sentence, from the numbers, saying what the best-against-best difference shows."""

    diff = (
        f"{100 * row['mean_diff']:+.1f} points [{100 * row['low']:+.1f}, {100 * row['high']:+.1f}]"
    )
    t_var, t_ref, t_at = (temperature(t, " = ") for t in (row["t_variant"], row["t_ref"], t_main))
    who = f"{row['variant']} at its best temperature ({t_var})"
    ref = f"pi_ref at its best ({t_ref}, both chosen on {row['selected_on']})"
    if row["low"] > 0:
        what, tail = (
            "beats",
            (
                f"the gain is more than sharpening: no temperature of pi_ref reaches it "
                f"({row['n_seeds_above']} of {row['n_seeds']} GRPO seeds with their own paired interval above pi_ref's best)."
            ),
        )
    elif row["high"] < 0:
        what, tail = (
            "falls below",
            (
                f"lowering pi_ref's temperature gives more than GRPO: the gain at {t_at} is "
                "sharpening, not amplification beyond it."
            ),
        )
    else:
        what, tail = (
            "does not differ from",
            (
                f"the gain at {t_at} is no larger than what lowering pi_ref's temperature gives "
                "(sharpening)."
            ),
        )
    where = (
        row["split"]
        if row.get("klass", "all") == "all"
        else f"{row['split']} ({row['klass']} problems)"
    )
    return f"{who} {what} {ref} on {where} by {diff}: {tail}"


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
