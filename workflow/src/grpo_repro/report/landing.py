"""The landing page of the HTML report (reStructuredText; the Snakefile's `report:`), written from
results/summary.json: first the picture a reader wants (success against the sampling temperature,
pi_ref and every variant, all problems and by class), then one compact table (held-out success per
variant at the training temperature and at its best temperature against pi_ref's best), one line
per verdict, the paper's headline (Sec. 6: 21% -> 37.5% on GSM8K test) with the configuration's
differences from it, and the theory stage's pass count. No number on the page is typed in: every
one is read from the summary."""

from __future__ import annotations

import base64

from grpo_repro.cells import pct, points, temperature
from grpo_repro.report import law, zero_text

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
)
#: the category of the fixed-point stage, listed when the run has the compact study
FIXED_POINT_STAGE = (
    "fixed_point",
    "the compact study: each training prompt's plateau against p*_G, p* and the baselines",
)
#: the category of the zero-success stage, listed when the run has the study
ZERO_STAGE = (
    "zero",
    "pi_ref's zero-success prompts: does any leave zero, and the control on them alone",
)
#: the full test is a named target (docs/fixed_point.md)
FIXED_POINT = (
    "The full fixed-point test (three betas, three seeds, two variants, group sizes and "
    "factors) is the named target ``fixed_point`` (about an hour here, docs/fixed_point.md)."
)


def stages(s: dict) -> tuple:
    """The categories of this report, in stage order: the fixed-point stage's only with the
    compact study (the summary's `fixed_point`)."""
    return (
        STAGES
        + ((FIXED_POINT_STAGE,) if s.get("fixed_point") else ())
        + ((ZERO_STAGE,) if s.get("zero") else ())
    )


NULL_MEANS = {  # what null stands for, by key (config/config.yaml's comments)
    "model.name_or_path": "the model organism built by the pipeline",
    "train.max_steps": "one epoch",
}


def what_ran(s: dict) -> str:
    """One sentence, before any claim: the model (the organism the pipeline builds, or a hub or
    local model), the data and the sizes of this run, from its configuration and data sizes."""
    cfg, data = s["config"], s.get("data", {})
    model, org, train = cfg["model"], cfg["organism"], cfg["train"]
    if model["name_or_path"] is None:
        who = (
            f"**What ran: the model organism, not the paper's Qwen2.5-0.5B-Instruct**: a "
            f"{org['layers']}-layer {org['arch']} of width {org['hidden']}, built and "
            f"trained by this pipeline (docs/organism.md)"
        )
    else:
        rev = f" at {model['revision'][:12]}" if model.get("revision") else ""
        who = f"**What ran: {model['name_or_path']}**{rev}"
    source = cfg["data"]["source"]
    on = "GSM8K-format problems it generates" if source == "organism" else source.upper()
    n_test = data.get("test", {}).get("n", cfg["data"]["n_test"])
    return (
        f"{who}, on {on}: {len(cfg['variants'])} GRPO variant(s) x {len(train['seeds'])} "
        f"seed(s), {n_test} held-out prompts x {cfg['eval']['samples']} samples each."
    )


def _value(x, key: str) -> str:
    if x is None:
        return f"null ({NULL_MEANS.get(key, 'the whole split')})"
    return str(x)


def best_rows(s: dict) -> dict:
    """{variant: the pooled best-against-best row on all problems} (report.temperature)."""
    return {
        r["variant"]: r
        for r in s.get("best_vs_best") or []
        if r["klass"] == "all" and r["seed"] == "all"
    }


def _table(s: dict) -> list[str]:
    """One row per variant: held-out success at the training temperature (pi_ref -> final, the
    paired gain) and, with temperatures, the variant at its best against pi_ref at its best."""
    test = [r for r in s["paired_difference"] if r["split"] == "test"]
    best = best_rows(s)
    n = len(s["config"]["train"]["seeds"])
    cols = ["variant", "pi_ref -> final (gain, points)", "seeds with a gain"]
    if best:
        cols += ["best T against pi_ref's best (points)", "seeds above"]
    lines = [
        f".. list-table:: Held-out (test) success, pooled over {n} GRPO seed(s), 95% intervals",
        "   :header-rows: 1",
        "",
        "   * - " + "\n     - ".join(cols),
    ]
    for r in test:
        cells = [
            r["variant"],
            f"{pct(r['mean_ref'])} -> {pct(r['mean_final'])} "
            f"({points(r['mean_diff'], r['low'], r['high'])})",
            f"{r.get('n_seeds_positive', 'n/a')} / {r.get('n_seeds', 'n/a')}",
        ]
        b = best.get(r["variant"])
        if best:
            cells += (
                [
                    f"{temperature(b['t_variant'], ' = ')} vs {temperature(b['t_ref'], ' = ')}: "
                    f"{points(b['mean_diff'], b['low'], b['high'])}",
                    f"{b['n_seeds_above']} / {b['n_seeds']}",
                ]
                if b
                else ["n/a", "n/a"]
            )
        lines.append("   * - " + "\n     - ".join(cells))
    return lines + [""]


def verdict(b: dict) -> str:
    """One line: is the variant at its best temperature above pi_ref at its best (the sharpening
    baseline), from the paired interval."""
    if b["low"] > 0:
        word = "amplification beyond sharpening"
    elif b["high"] < 0:
        word = "below pi_ref's best temperature: sharpening does more"
    else:
        word = "no measurable difference from pi_ref's best temperature"
    t_var, t_ref = temperature(b["t_variant"], " = "), temperature(b["t_ref"], " = ")
    return (
        f"**{b['variant']}**: {word}: {pct(b['mean_variant'])} at {t_var} against "
        f"pi_ref's {pct(b['mean_ref'])} at {t_ref}, the curves' points in the picture "
        f"({points(b['mean_diff'], b['low'], b['high'])} points, {b['n_seeds_above']} of "
        f"{b['n_seeds']} seeds above; best temperatures chosen on {b['selected_on']}, reported on "
        f"{b['split']})"
    )


#: the report's own layout centres the landing text beside the workflow's graph, in a narrow
#: column whose top a tall graph pushes off the first screen: on the landing page the text starts
#: at the top, is wide enough for the picture, and the graph follows below it. At phone width the
#: report's menu keeps its content's width and squeezes the page to nothing, the text centred off
#: the screen's left edge where nothing scrolls to: there the menu goes on top, its height bounded,
#: and the page takes the screen's width below it.
LAYOUT_CSS = (
    "div.h-screen:has(div.landing) { align-items: flex-start !important; } "
    "div.gap-3:has(> div div.landing) { flex-direction: column !important; } "
    "div.prose:has(div.landing) { max-width: 72rem !important; } "
    "@media (max-width: 800px) { "
    "div.w-screen.h-screen:has(div.landing) { flex-direction: column !important; } "
    "div.w-screen.h-screen:has(div.landing) > nav { width: 100% !important; "
    "min-width: 0 !important; height: auto !important; max-height: 30vh; } "
    "div.w-screen.h-screen:has(div.landing) > div.grow { width: 100% !important; "
    "min-height: 0 !important; justify-content: flex-start !important; } "
    "div.gap-3:has(div.landing) { width: 100% !important; padding: 0.5rem !important; } "
    "div.gap-3:has(div.landing) > div, div.prose:has(div.landing) { width: 100% !important; "
    "max-width: 100% !important; min-width: 0 !important; } "
    "div.document:has(div.landing) table { display: block; overflow-x: auto; } }"
)
#: the landing page's own block (its class `landing` is what LAYOUT_CSS finds it by)
STYLE = [
    ".. raw:: html",
    "",
    f"   <style>{LAYOUT_CSS}</style>",
    '   <div class="landing"></div>',
    "",
]


#: the alt text of each picture the page embeds, by its CSS class
ALT = {
    "landing-picture": "success against the sampling temperature, pi_ref and every variant, by "
    "problem class",
    "law-picture": "fixed-point law: each training prompt's plateau against p_ref, p* and p*_G",
    "zero-picture": "success on pi_ref's zero-success prompts per checkpoint, beside the theory's 0",
}


#: the most of the screen each picture takes: the second one ends within the first two screens
HEIGHT = {"landing-picture": "70vh", "law-picture": "45vh", "zero-picture": "45vh"}


def _picture(png: bytes | None, cls: str = "landing-picture") -> list[str]:
    """The PNG embedded as raw HTML (a data URL cut into short lines: docutils refuses a line of
    more than 10,000 characters, and URL parsing drops the newlines again)."""
    if not png:
        return []
    data = base64.b64encode(png).decode("ascii")
    return [
        ".. raw:: html",
        "",
        f'   <img class="{cls}" alt="{ALT[cls]}" style="max-width:100%;max-height:{HEIGHT[cls]}"',
        '   src="data:image/png;base64,',
        *(f"   {data[i : i + 76]}" for i in range(0, len(data), 76)),
        '   ">',
        "",
    ]


def landing_rst(
    s: dict,
    picture: bytes | None = None,
    law_picture: bytes | None = None,
    zero_picture: bytes | None = None,
) -> str:
    """The page (reStructuredText) from the summary dict: what ran (what_ran), then the picture a
    reader wants first
    (`picture`: the report's success-against-temperature PNG, embedded), one compact table, one
    line per verdict, the fixed-point law beside them (report.law; `law_picture`: the compact
    study's plateau against p*_G per prompt), the zero-success study (grpo_repro.zero;
    `zero_picture`: success on the zeros per checkpoint), then the paper's numbers, the theory's pass count
    and the configuration's differences from the paper; everything else is in the report's
    categories."""
    cfg, pc, d = s["config"], s["paper_comparison"], s["derivations"]
    paper = pc["paper"]
    n_test = s.get("data", {}).get("test", {}).get("n", "n/a")
    lines = [
        *STYLE,
        what_ran(s),
        "",
        "GRPO success amplification (Mroueh, arXiv 2503.06639), reproduced end to end on it: "
        f"{n_test} held-out prompts, {cfg['eval']['samples']} samples each.",
        "",
        *_picture(picture),
        *_table(s),
    ]
    best = best_rows(s)
    if best:
        lines += [f"- {verdict(best[v])}" for v in cfg["variants"] if v in best] + [""]
    lines += law.landing(s.get("fixed_point"))
    lines += _picture(law_picture, "law-picture") if s.get("fixed_point") else []
    lines += zero_text.landing(s.get("zero"))
    lines += _picture(zero_picture, "zero-picture") if s.get("zero") else []
    lines += [
        f"**Headline beside the paper.** The paper: GSM8K test success {pct(paper['ref_mean_success'])} "
        f"(pi_ref) -> {pct(paper['final_mean_success'])} after one epoch of GRPO. "
        f"{pc['statement']}",
        "",
    ]
    if pc["deviations"]:
        lines += [
            f"- ``{x['key']}``: {_value(x['ours'], x['key'])} (paper: {_value(x['paper'], x['key'])})"
            for x in pc["deviations"]
        ] + [""]
    lines += [
        f"**Theory.** {d['claims_passed']} / {d['claims_total']} claims checked pass; "
        f"{d['errata_passed']} / {d['errata_total']} errata of the paper's text confirmed.",
        "",
        "**Everything else** is one click away, in the categories of this report, in stage order: "
        + "; ".join(f"**{name}**: {text}" for name, text in stages(s))
        + ". Every number on this page is read from results/summary.json; results/summary.md has "
        "the full tables. " + FIXED_POINT,
    ]
    return "\n".join(lines) + "\n"
