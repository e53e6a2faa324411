"""results/summary.md: the summary dict (grpo_repro.report.summary.build) as Markdown; the table cells
grpo_repro.cells'.

The section against the sharpening baseline (grpo_repro.report.temperature, `sharpening_section`):
each policy at its best sampling temperature against pi_ref at its best, the verdicts, and success
against the sampling temperature per problem class.
"""

from __future__ import annotations

import json

from grpo_repro.cells import num, pct, pct_ci, points, temperature
from grpo_repro.report import law, zero_text
from grpo_repro.report.landing import best_rows, what_ran


def verdict_lines(s: dict) -> list[str]:
    """The three lines summary.md opens with, from the run's numbers: what ran; each variant at
    its best temperature against pi_ref at its best (or, without temperatures, final against
    pi_ref); the theory's pass count and the fixed-point law's verdict."""
    best = best_rows(s)
    if best:
        words = [
            f"{v} {points(b['mean_diff'], b['low'], b['high'])} points"
            + (" (above)" if b["low"] > 0 else " (below)" if b["high"] < 0 else " (no difference)")
            for v, b in best.items()
        ]
        amp = f"Best temperature against pi_ref's best ({next(iter(best.values()))['split']}): "
    else:
        rows = [r for r in s["paired_difference"] if r["split"] == "test"]
        words = [
            f"{r['variant']} {points(r['mean_diff'], r['low'], r['high'])} points" for r in rows
        ]
        amp = "Final against pi_ref (test): "
    d, fp = s["derivations"], s.get("fixed_point")
    law_word = (
        f"; fixed-point law: p*_G {'resolved' if fp['resolved'] else 'NOT resolved'} against "
        f"{fp['better_baseline']}, aim {fp['aim']}"
        if fp
        else ""
    )
    return [
        f"1. {what_ran(s)}",
        f"2. {amp}{'; '.join(words)}.",
        f"3. Theory: {d['claims_passed']} / {d['claims_total']} claims pass{law_word}.",
        "",
    ]


def trl_era(t: dict) -> str:
    """The three settings of TRL's era the run chose (docs/gpu.md, "The paper's TRL"), in words."""
    temp = t["logprob_temperature"]
    at = f"{temp:g}" if temp is not None else f"{t['temperature']:g}, the sampling one"
    head = "float32" if t["lm_head_fp32"] or not t["bf16"] else "bf16 under autocast"
    return (
        f"TRL's era (docs/gpu.md): the loss's log-probs at temperature {at}, learning-rate "
        f"schedule {t['lr_schedule']}, LM head in {head}."
    )


def _header(s: dict) -> list[str]:
    cfg = s["config"]
    t = cfg["train"]
    return [
        "# Summary: GRPO success amplification (Mroueh, arXiv 2503.06639)",
        "",
        *verdict_lines(s),
        f"Configuration: variants {', '.join(cfg['variants'])}; model "
        f"`{cfg['model']['name_or_path'] or 'organism (built by the pipeline)'}`; data `{cfg['data']['source']}`; "
        f"beta = {t['beta']}, smoothing eps = {t['smoothing_eps']}, advantage = {t['advantage']}, "
        f"mu = {t['num_iterations']}, G = {t['num_generations']}, lr = {t['learning_rate']}; "
        f"{cfg['eval']['samples']} samples per prompt; GRPO seeds {t['seeds']}. {trl_era(t)} "
        "Intervals: 95%; "
        "pooled over GRPO seeds: a crossed bootstrap that resamples seeds and prompts; per seed: a "
        f"bootstrap over prompts ({cfg['report']['n_bootstrap']} resamples).",
        "",
    ]


def _headline(s: dict) -> list[str]:
    """Held-out success beside the paper's, the comparability statement."""
    pc = s["paper_comparison"]
    paper = pc["paper"]
    L = [
        "## Held-out success beside the paper",
        "",
        "| | pi_ref | final | final - pi_ref [95% CI] | seeds with a gain |",
        "|---|---|---|---|---|",
        f"| paper: grpo, GSM8K test, one run | {pct(paper['ref_mean_success'])} | "
        f"{pct(paper['final_mean_success'])} | "
        f"{pct(paper['final_mean_success'] - paper['ref_mean_success'])} | - |",
    ]
    for r in s["paired_difference"]:
        if r["split"] == "test":
            L.append(
                f"| this run: {r['variant']}, test (step {r['final_step']}) | {pct(r['mean_ref'])} | "
                f"{pct(r['mean_final'])} | {pct_ci(r['mean_diff'], r['low'], r['high'])} | "
                f"{r.get('n_seeds_positive', 'n/a')} / {r.get('n_seeds', 'n/a')} |"
            )
    return L + ["", pc["statement"], ""]


def _deviations(s: dict) -> list[str]:
    dev = s["paper_comparison"]["deviations"]
    if not dev:
        return []
    L = ["| key | this run | paper |", "|---|---|---|"]
    return L + [f"| {d['key']} | {d['ours']} | {d['paper']} |" for d in dev] + [""]


def _data(s: dict) -> list[str]:
    if not s.get("data"):
        return []
    L = [
        "## Data: splits and difficulty mix (share of problems by number of steps)",
        "",
        "| split | prompts | steps mix |",
        "|---|---|---|",
    ]
    L += [
        f"| {k} | {v['n']} | {', '.join(f'{100 * x:.1f}%' for x in v.get('step_mix', [])) or 'n/a'} |"
        for k, v in s["data"].items()
    ]
    return L + [""]


def _by_seed(s: dict) -> list[str]:
    if not s.get("paired_difference_by_seed"):
        return []
    L = [
        "## Final - p_ref per GRPO seed (paired bootstrap over prompts)",
        "",
        "| variant | seed | split | mean p_ref | mean final | difference [95% CI] |",
        "|---|---|---|---|---|---|",
    ]
    L += [
        f"| {r['variant']} | {r['seed']} | {r['split']} | {pct(r['mean_ref'])} | "
        f"{pct(r['mean_final'])} | {pct_ci(r['mean_diff'], r['low'], r['high'])} |"
        for r in s["paired_difference_by_seed"]
    ]
    return L + [""]


def _checkpoints(s: dict) -> list[str]:
    """Mean success per checkpoint, and final - p_ref paired over prompts with the shares."""
    L = [
        "## Mean success per checkpoint (strict scoring)",
        "",
        "| variant | split | step | prompts | mean [95% CI] | lenient mean |",
        "|---|---|---|---|---|---|",
    ]
    for r in s["mean_success"]:
        L.append(
            f"| {r['variant']} | {r['split']} | {r['step']} | {r['n_prompts']} | "
            f"{pct_ci(r['mean'], r['low'], r['high'])} | {pct(r['mean_lenient'])} |"
        )
    L += [
        "",
        "## Final - p_ref (paired over prompts)",
        "",
        "| variant | split | final step | mean p_ref | mean final | difference [95% CI] | above / on / below |",
        "|---|---|---|---|---|---|---|",
    ]
    sh = {(r["variant"], r["split"]): r for r in s["amplification_shares"]}
    for r in s["paired_difference"]:
        a = sh.get((r["variant"], r["split"]), {})
        L.append(
            f"| {r['variant']} | {r['split']} | {r['final_step']} | {pct(r['mean_ref'])} | "
            f"{pct(r['mean_final'])} | {pct_ci(r['mean_diff'], r['low'], r['high'])} | "
            f"{pct(a.get('share_above'))} / {pct(a.get('share_on'))} / {pct(a.get('share_below'))} |"
        )
    return L


def _overlay(s: dict) -> list[str]:
    n = int(s["config"]["eval"]["samples"])
    L = [
        "",
        "## Theory overlay (predicted recurrence from each prompt's measured p_ref)",
        "",
        s["iteration_note"],
        "",
        f"p_ref = 0 below means 0 successes in the samples: with n = {n} samples, 0/{n} has a 95% "
        f"upper bound of {pct(1 - 0.025 ** (1 / n))} (Clopper-Pearson: 1 - 0.025^(1/n)), so such a "
        "prompt is not shown to be unsolvable, and 'stayed 0' is 0/n again at the final checkpoint"
        + (
            " (the zero-success study, above, confirms zeros with fresh samples)."
            if s.get("zero")
            else "."
        ),
        "",
        "Each limit twice: h (the paper's population map) and h_G at the run's group size G (each "
        "group whitened by its own mean and spread); `closer`: the map whose limit is nearer the "
        "final checkpoint.",
        "",
        "| variant | split | amplified measured | amplified predicted | 0/n at p_ref, 0/n at the end | "
        "Spearman (limit) | Spearman (iterate) | Spearman (p_ref) | mean abs gap to limit: h / h_G | "
        "closer |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in s["theory_overlay"]:
        L.append(
            f"| {r['variant']} | {r['split']} | {pct(r['frac_amplified_measured'])} | "
            f"{pct(r['frac_amplified_predicted'])} | {r['n_ref_zero_stayed_zero']}/{r['n_ref_zero']} | "
            f"{num(r['spearman_limit'])} | {num(r['spearman_iter'])} | {num(r['spearman_p_ref'])} | "
            f"{num(r['mean_abs_gap_limit'])} / {num(r['mean_abs_gap_limit_G'])} (G {r['G']}) | "
            f"{r['closer'] if isinstance(r.get('closer'), str) and r['closer'] else 'n/a'} |"
        )
    notes = sorted({r["note"] for r in s["theory_overlay"] if r.get("note")})
    return L + [""] + [f"Note: {n}." for n in notes] + ([""] if notes else [])


def _derivations(s: dict) -> list[str]:
    d = s["derivations"]
    return [
        "## Derivation checks (stage 1)",
        "",
        f"Claims passed: {d['claims_passed']} / {d['claims_total']}; paper errata confirmed: "
        f"{d['errata_passed']} / {d['errata_total']}."
        + (f" Failed: {', '.join(d['failed'])}." if d["failed"] else ""),
        "",
    ]


def _step0(s: dict) -> list[str]:
    if not s.get("step0_consistency"):
        return []
    L = [
        "## Step-0 consistency (training and evaluation see the same pi_ref)",
        "",
        "Mean training reward over the first epoch of the pool (each pool prompt sampled once, "
        "policy still near pi_ref) against pi_ref's evaluated mean on the same pool.",
        "",
        "| variant | first-epoch steps | training reward | pi_ref pool mean | difference |",
        "|---|---|---|---|---|",
    ]
    for v, r in s["step0_consistency"].items():
        L.append(
            f"| {v} | {r['first_epoch_steps']} | {pct(r['first_epoch_reward'])} | "
            f"{pct(r['pi_ref_pool_mean'])} | {pct(r['difference'])} |"
        )
    return L + [""]


def _training(s: dict) -> list[str]:
    """Each run's last logged values, and whether its recorded config is the workflow's."""
    L = [
        "## Training runs (last logged values)",
        "",
        "| variant | step | reward | kl | loss |",
        "|---|---|---|---|---|",
    ]
    for v, r in s["train"].items():
        L.append(
            f"| {v} | {r.get('step', 'n/a')} | {num(r.get('reward'))} | {num(r.get('kl'), '{:.4g}')} | "
            f"{num(r.get('loss'), '{:.4g}')} |"
        )
    diff = {v: k for v, k in s["train_run_config_differs_from_workflow_config"].items() if k}
    return (
        L
        + [""]
        + (
            [f"Training run configs differ from the workflow config: {diff}", ""]
            if diff
            else ["Every training run's recorded config equals the workflow config.", ""]
        )
    )


def _benchmarks_and_config(s: dict) -> list[str]:
    L = []
    if s["benchmarks"]:
        L += ["## Wall time per rule (Snakemake benchmarks)", "", "| file | seconds |", "|---|---|"]
        L += [f"| {b['file']} | {b['seconds']:.1f} |" for b in s["benchmarks"]] + [""]
    return L + [
        "## Resolved configuration",
        "",
        "```json",
        json.dumps(s["config"], indent=2, sort_keys=True, default=str),
        "```",
        "",
    ]


def sharpening_section(s: dict) -> list[str]:
    """The headline against the sharpening baseline: best temperature against best temperature
    (grpo_repro.report.temperature), the verdicts, and success against temperature per class."""
    if not s.get("best_vs_best"):
        return []
    L = [
        "## Against the sharpening baseline: best temperature against best temperature",
        "",
        "Each policy's best sampling temperature is chosen on the validation split when it was "
        "evaluated at the temperatures (else on the reported split itself, which flatters both; "
        "the verdicts name the split), then compared on the held-out split, paired per prompt. Lowering pi_ref's "
        "temperature is the trivial way to raise success at T = 1: GRPO's gain is amplification "
        "beyond sharpening only where it beats pi_ref at ITS best temperature.",
        "",
        "| class | variant (best T) | pi_ref (best T) | variant | pi_ref | variant - pi_ref [95% CI] | "
        "seeds above (per-seed CI > 0) |",
        "|---|---|---|---|---|---|---|",
    ]
    by_seed = {}
    for r in s.get("best_vs_best_by_seed", []):
        by_seed.setdefault((r["variant"], r["klass"]), []).append(r)
    for r in s["best_vs_best"]:
        seeds = by_seed.get((r["variant"], r["klass"]), [])
        per = ", ".join(f"{100 * q['mean_diff']:+.1f}" for q in seeds)
        L.append(
            f"| {r['klass']} ({r['n_prompts']} prompts) | {r['variant']} ({temperature(r['t_variant'])}) | "
            f"{temperature(r['t_ref'])} | {pct(r['mean_variant'])} | {pct(r['mean_ref'])} | "
            f"{pct_ci(r['mean_diff'], r['low'], r['high'])} | {r['n_seeds_above']} / {r['n_seeds']} "
            f"({per}) |"
        )
    L += [""] + [f"- {v}" for v in s["sharpening_verdict"].values()] + [""]
    if s.get("sharpening_verdict_by_class"):
        L += ["By problem class:", ""] + [f"- {v}" for v in s["sharpening_verdict_by_class"]] + [""]
    curve = s.get("temperature_curve", [])
    temps = sorted({r["temperature"] for r in curve}, reverse=True)
    if curve:
        L += [
            "### Success against the sampling temperature (pooled over GRPO seeds)",
            "",
            "| split | class | policy | " + " | ".join(temperature(t) for t in temps) + " |",
            "|---|---|---|" + "---|" * len(temps),
        ]
        rows = {}
        for r in curve:
            rows.setdefault((r["split"], r["klass"], r["variant"]), {})[r["temperature"]] = r
        for (split, klass, variant), by_t in sorted(
            rows.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] != "ref", kv[0][2])
        ):
            cells = [
                pct_ci(by_t[t]["mean"], by_t[t]["low"], by_t[t]["high"]) if t in by_t else "n/a"
                for t in temps
            ]
            L.append(f"| {split} | {klass} | {variant} | " + " | ".join(cells) + " |")
        L += [""]
    return L


#: the sections of results/summary.md, in order
SECTIONS = (
    _header,
    _headline,
    sharpening_section,
    lambda s: law.markdown(s.get("fixed_point")),
    lambda s: zero_text.markdown(s.get("zero")),
    _deviations,
    _data,
    _by_seed,
    _checkpoints,
    _overlay,
    _derivations,
    _step0,
    _training,
    _benchmarks_and_config,
)


def markdown(s: dict) -> str:
    """results/summary.md from the summary dict: its SECTIONS in order."""
    return "\n".join(line for section in SECTIONS for line in section(s))
