"""The landing page of the HTML report (reStructuredText; the Snakefile's `report:`), written from
results/summary.json: the headline of the run beside the paper's (Sec. 6: 21% -> 37.5% on GSM8K
test), per variant on held-out and trained-on prompts with 95% intervals over GRPO seeds and
prompts, the theory stage's pass count, and the configuration's differences from the paper. No
number on the page is typed in: every one is read from the summary."""

from __future__ import annotations

from grpo_repro.report.markdown import pct

STAGES = (
    (
        "theory",
        "checks of the claims of Sec. 2-5 (sympy proofs, exact and numeric checks) and of "
        "the paper's errata",
    ),
    ("figures", "the fixed-point figures (Fig 1, 2, 4, 5) and beyond"),
    (
        "train",
        "the reference policy and GRPO training with TRL, per variant and seed: training curves",
    ),
    (
        "evaluate",
        "every checkpoint sampled per prompt: mean success per checkpoint, trajectories (Fig 3)",
    ),
    ("report", "success amplification, theory overlay, summary tables"),
    ("fixed_point", "the fixed-point prediction tested in training (named target `fixed_point`)"),
)


NULL_MEANS = {  # what null stands for, by key (config/config.yaml's comments)
    "model.name_or_path": "the model organism built by the pipeline",
    "train.max_steps": "one epoch",
}


def _value(x, key: str) -> str:
    if x is None:
        return f"null ({NULL_MEANS.get(key, 'the whole split')})"
    return str(x)


def _row(r: dict) -> str:
    return (
        f"   * - {r['variant']}\n     - {pct(r['mean_ref'])}\n     - {pct(r['mean_final'])}\n"
        f"     - {100 * r['mean_diff']:+.1f} [{100 * r['low']:+.1f}, {100 * r['high']:+.1f}]\n"
        f"     - {r.get('n_seeds_positive', 'n/a')} / {r.get('n_seeds', 'n/a')}"
    )


def _table(rows: list[dict], title: str) -> list[str]:
    head = [
        f".. list-table:: {title}",
        "   :header-rows: 1",
        "",
        "   * - variant\n     - pi_ref\n     - final\n     - final - pi_ref (points) [95% CI]\n"
        "     - seeds with a gain",
    ]
    return head + [_row(r) for r in rows] + [""]


def landing_rst(s: dict) -> str:
    """The page (reStructuredText) from the summary dict."""
    cfg, pc, d = s["config"], s["paper_comparison"], s["derivations"]
    paired = s["paired_difference"]
    test = [r for r in paired if r["split"] == "test"]
    train = [r for r in paired if r["split"] == "train"]
    paper = pc["paper"]
    lines = [
        "Reproduction of Mroueh, *Reinforcement Learning with Verifiable Rewards: GRPO's Effective "
        "Loss, Dynamics, and Success Amplification* (arXiv 2503.06639), end to end.",
        "",
        "**Headline.** The paper reports GSM8K test success rising from "
        f"{pct(paper['ref_mean_success'])} (pi_ref) to {pct(paper['final_mean_success'])} after "
        "one epoch of GRPO. This run, on held-out prompts never trained on "
        f"({s.get('data', {}).get('test', {}).get('n', 'n/a')} prompts, "
        f"{cfg['eval']['samples']} samples each, {len(cfg['train']['seeds'])} GRPO seeds; interval: "
        "crossed bootstrap over seeds and prompts):",
        "",
        *_table(test, "Held-out (test) success, pooled over GRPO seeds"),
    ]
    if train:
        lines += _table(train, "Trained-on prompts (the tracked pool), pooled over GRPO seeds")
    if s.get("sharpening_verdict"):
        lines += [
            "**Against the sharpening baseline** (each policy at its best sampling temperature, "
            "chosen on the validation split; the trivial way to raise success at T = 1 is to "
            "lower pi_ref's temperature):",
            "",
            *[f"- {v}" for v in s["sharpening_verdict"].values()],
            "",
        ]
    lines += [
        f"**Theory.** {d['claims_passed']} / {d['claims_total']} claims checked pass; "
        f"{d['errata_passed']} / {d['errata_total']} errata of the paper's text confirmed.",
        "",
        f"**Comparability.** {pc['statement']}",
        "",
    ]
    if pc["deviations"]:
        lines += [
            f"- ``{x['key']}``: {_value(x['ours'], x['key'])} (paper: {_value(x['paper'], x['key'])})"
            for x in pc["deviations"]
        ]
        lines += [""]
    lines += ["**Stages** (the report's categories, in order):", ""]
    lines += [f"{i}. **{name}**: {text};" for i, (name, text) in enumerate(STAGES, 1)]
    lines += ["", "Every number here is read from results/summary.json (results/summary.md)."]
    return "\n".join(lines) + "\n"
