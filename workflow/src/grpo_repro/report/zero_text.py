"""The zero-success study's lines (grpo_repro.zero: Sec. 3 boundary case p_ref(q) = 0, Sec. 6
"GRPO cannot create successes"): its section of results/summary.md and its own page
(`markdown`), and its line on the report's landing page (`landing`), from the summary's `zero`
section (grpo_repro.zero.section)."""

from __future__ import annotations

from grpo_repro.cells import pct, pct_ci
from grpo_repro.stats import wilson
from grpo_repro.zero import CONTROL, upper_bound

P = "{:.2f}"  # percentages of rates near 0: two decimals


def markdown(s: dict | None) -> list[str]:
    """The zero-success section of summary.md (and the study's own page); none without the study."""
    if not s:
        return []
    c, samples = s["control"], s["samples"]
    L = [
        "## Zero-success prompts: can GRPO create successes? (Sec. 3 boundary case, Sec. 6)",
        "",
        "The paper: p_ref(q) = 0 is a fixed point of every variant's recursion, so no prompt "
        "leaves zero (per prompt; a language model shares its weights across prompts). Zeros are "
        f"screened by pi_ref's samples and confirmed by {samples} fresh ones (0 of {samples}: "
        f"p_ref <= {pct(upper_bound(0, samples), P)}, Clopper-Pearson 95%); pi_ref and each run's "
        f"final checkpoint are then measured on them with {samples} more (the earlier checkpoints, "
        "in results/zero/data/checkpoints.csv, with eval.samples). 'Left zero': success above "
        "the prompt's bound. pass@k at the largest k: support expansion when pi_ref's is 0 and a "
        "run's is not.",
        "",
        "| split | zeros in the screen / confirmed | run | final step | success [95% CI] | "
        "left zero (predicted 0) | pass@k (k) |",
        "|---|---|---|---|---|---|---|",
    ]
    for split, d in s["splits"].items():
        for run, r in d["runs"].items():
            pk = d["pass_at_max_k"].get(run, {})
            L.append(
                f"| {split} | {d['screened']} / {d['confirmed']} | {run} | {r['step']} | "
                f"{_rate(r)} | "
                f"{r['left_zero']} of {r['prompts']} | "
                f"{pct(pk.get('pass_at_k'))} ({pk.get('k', '-')}) |"
            )
        if not d["runs"]:
            L.append(f"| {split} | {d['screened']} / 0 | - | - | - | - | - |")
    still = c.get("steps_checked_still", 0)
    visits = s.get("train_visits")
    L += [
        "",
        "Training prompts screened: the first zero.screen_train of the training split (null: all)"
        + (
            f"; each main run samples every training prompt in {visits:g} batch(es)."
            if visits
            else "."
        ),
        f"Control ({c.get('run', 'the first run')}: the same run on the "
        f"{c.get('prompts', 0)} zeros alone, {c.get('visits_per_prompt', 0):.0f} visits each): {c.get('successes', 0)} "
        f"successes in {c.get('samples', 0)} sampled completions; weights bit for bit pi_ref's "
        f"after each of the {still} steps taken before the first success"
        + (f" (first at step {c['first_success_step']})" if c.get("first_success_step") else "")
        + ". The main runs' gain on the same prompts is transfer through shared weights.",
        "",
    ]
    return L


def main_runs(d: dict) -> dict:
    """The GRPO runs of one split's section: pi_ref and the control left out."""
    return {n: r for n, r in d["runs"].items() if n != "ref" and not n.startswith(CONTROL)}


def pooled(runs: dict) -> dict:
    """Successes, samples, their rate with its Wilson interval, and the (prompt, run) pairs that
    left zero, pooled over `runs` (a section's per-run final rows)."""
    k = sum(r["successes"] for r in runs.values())
    n = sum(r["samples"] for r in runs.values())
    low, high = wilson(k, n) if n else (None, None)
    return {
        "successes": k,
        "samples": n,
        "p_hat": k / n if n else None,
        "ci_low": low,
        "ci_high": high,
        "left_zero": sum(r["left_zero"] for r in runs.values()),
        "pairs": sum(r["prompts"] for r in runs.values()),
    }


def _rate(r: dict) -> str:
    """A rate near 0 and its interval, in percent with two decimals."""
    return pct_ci(r["p_hat"], r["ci_low"], r["ci_high"], P)


def landing(s: dict | None) -> list[str]:
    """The landing page's line (reStructuredText): the theory's prediction beside pi_ref's fresh
    sample, the GRPO runs' final checkpoints and the control, on the confirmed zeros."""
    if not s:
        return []
    n, parts = s["samples"], []
    for split, d in s["splits"].items():
        if not d["confirmed"]:
            parts.append(f"{split}: none of {d['screened']} screened prompts confirmed")
            continue
        ref, runs = d["runs"].get("ref"), main_runs(d)
        g = pooled(runs)
        parts.append(
            f"{split}: {d['confirmed']} of {d['screened']} screened prompts confirmed; on them "
            f"pi_ref's next {n} samples give {_rate(ref)} ({ref['left_zero']} of "
            f"{ref['prompts']} prompts above the bound), the {len(runs)} GRPO runs' final "
            f"checkpoints {_rate(g)} ({g['left_zero']} of {g['pairs']} prompt-run pairs above it)"
        )
    c = s["control"]
    ctrl = [
        r for d in s["splits"].values() for n_, r in d["runs"].items() if n_.startswith(CONTROL)
    ]
    end = f", {pct(ctrl[0]['p_hat'], P)} at its end" if ctrl else ""
    return [
        "**Can GRPO create successes? (Sec. 3: p_ref(q) = 0 is a fixed point: none leaves zero.)** "
        f"Zeros: 0 of {n} fresh pi_ref samples (p_ref <= {pct(upper_bound(0, n), P)}, 95%). "
        + "; ".join(parts)
        + f". Control, the same run on the zeros alone ({c.get('visits_per_prompt', 0):.0f} visits "
        f"each): weights bit for bit pi_ref's through the {c.get('steps_checked_still', 0)} steps "
        f"before its first sampled success; {c.get('successes', 0)} successes sampled{end}.",
        "",
    ]
