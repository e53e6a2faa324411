"""The report's landing page (grpo_repro.report.landing): the picture first, embedded in lines
docutils accepts, one compact table, one verdict line per variant read from its interval."""

import base64

import pytest
from docutils.core import publish_parts

from grpo_repro.report.landing import landing_rst, verdict


def best(variant, low, high, diff=0.1):
    return {
        "variant": variant,
        "klass": "all",
        "seed": "all",
        "split": "test",
        "selected_on": "val",
        "t_variant": 0.0,
        "t_ref": 0.3,
        "mean_diff": diff,
        "mean_variant": 0.5 + diff,
        "mean_ref": 0.5,
        "low": low,
        "high": high,
        "n_seeds_above": 2,
        "n_seeds": 3,
    }


def summary():
    paired = {"split": "test", "mean_ref": 0.4, "mean_final": 0.7, "mean_diff": 0.3}
    paired |= {"low": 0.25, "high": 0.35, "n_seeds_positive": 3, "n_seeds": 3}
    return {
        "config": {
            "variants": ["grpo", "mirror"],
            "eval": {"samples": 50},
            "train": {"seeds": [0]},
            "model": {"name_or_path": None, "revision": None},
            "organism": {"layers": 2, "arch": "llama", "hidden": 128},
            "data": {"source": "organism", "n_test": 200},
        },
        "paper_comparison": {
            "paper": {"ref_mean_success": 0.21, "final_mean_success": 0.375},
            "statement": "NOT comparable.",
            "deviations": [],
        },
        "derivations": {
            "claims_passed": 9,
            "claims_total": 9,
            "errata_passed": 3,
            "errata_total": 3,
        },
        "paired_difference": [{**paired, "variant": v} for v in ("grpo", "mirror")],
        "best_vs_best": [best("grpo", 0.05, 0.2), best("mirror", -0.2, -0.05, -0.1)],
        "data": {"test": {"n": 200}},
    }


@pytest.mark.parametrize(
    "low, high, word",
    [
        (0.05, 0.2, "amplification beyond sharpening"),
        (-0.2, -0.05, "below pi_ref's best temperature"),
        (-0.05, 0.1, "no measurable difference"),
    ],
)
def test_verdict_follows_the_interval(low, high, word):
    line = verdict(best("grpo", low, high))
    assert word in line
    # the two points of the picture's curves the verdict compares, then their difference
    assert "at greedy against pi_ref's 50.0% at T = 0.3" in line


@pytest.mark.parametrize(
    "model, said, not_said",
    [
        (
            {"name_or_path": None, "revision": None},
            "**What ran: the model organism, not the paper's Qwen2.5-0.5B-Instruct**: a 2-layer "
            "llama of width 128",
            "What ran: Qwen",
        ),
        (
            {"name_or_path": "Qwen/Qwen2.5-0.5B-Instruct", "revision": "7ae557604adf67be"},
            "**What ran: Qwen/Qwen2.5-0.5B-Instruct** at 7ae557604adf, on GSM8K",
            "model organism",
        ),
    ],
)
def test_the_page_says_what_ran_before_any_claim(model, said, not_said):
    s = summary()
    s["config"]["model"] = model
    s["config"]["data"]["source"] = "gsm8k" if model["name_or_path"] else "organism"
    rst = landing_rst(s, None)
    first = next(line for line in rst.splitlines() if not line.startswith((".. ", "   ")) and line)
    assert said in first and not_said not in first
    assert "200 held-out prompts x 50 samples each" in first
    assert rst.index(first) < rst.index("reproduced end to end")


def test_picture_first_then_table_then_one_verdict_per_variant():
    png = bytes(range(256)) * 200  # 51 kB: its data URL alone would exceed docutils' line limit
    rst = landing_rst(summary(), png)
    assert max(len(line) for line in rst.splitlines()) < 10_000  # docutils line_length_limit
    assert rst.index("landing-picture") < rst.index(".. list-table::") < rst.index("- **grpo**")
    assert [line[:12] for line in rst.splitlines() if line.startswith("- **")] == [
        "- **grpo**: ",
        "- **mirror**",
    ]
    html = publish_parts(rst, writer="html", settings_overrides={"report_level": 2})["body"]
    assert "system-message" not in html
    src = html[
        html.index('src="data:image/png;base64,') + 27 : html.index('">', html.index("src="))
    ]
    assert base64.b64decode("".join(src.split())) == png  # the newlines are no part of the data


def test_no_picture_without_temperatures():
    s = summary()
    s["best_vs_best"] = []
    rst = landing_rst(s, None)
    assert "landing-picture" not in rst and "best T" not in rst and "- **" not in rst


def law():
    """summary.json's `fixed_point` (grpo_repro.report.law.section) of a compact study."""
    gaps = {"gap_pred_G": 0.03, "gap_pred": 0.07, "gap_stays": 0.15, "gap_to_one": 0.35}
    out = {
        k: v
        for g, m in gaps.items()
        for k, v in ((g, m), (g + "_lo", m - 0.01), (g + "_hi", m + 0.01))
    }
    own = {"own": True, "diff": 0.12, "diff_lo": 0.09, "diff_hi": 0.15, "resolved": True}
    return {
        **out,
        **{"run": "grpo_k3_ratio_compact", "beta": 2.0, "G": 8, "n_prompts": 32, "n_seeds": 1},
        **{"aim": "met", "aim_gap_G": 0.03, "ratio_G": 0.2, "ratio_G_lo": 0.1, "ratio_G_hi": 0.3},
        **{"resolved": True, "floor_G": 0.01},
        "better_baseline": "stays at p_ref",
        "settings": {"steps": 160},
        "resolution": [own],
    }


def test_names_only_categories_the_report_has():
    """The stage list names the report's categories: without the compact study not the
    fixed-point stage's, which is said to be the named target, nor the zero-success stage's; with
    both, all seven."""
    from grpo_repro.report.landing import STAGES
    from grpo_repro.report.registry import CATEGORIES

    rst = landing_rst(summary())
    listed = rst.split("**Everything else**")[1]
    assert [name for name, _ in STAGES] == [
        c for c in CATEGORIES if c not in ("fixed_point", "zero")
    ]
    assert "**fixed_point**" not in listed and "named target ``fixed_point``" in listed
    from tests.unit.zero.test_zero import _section

    both = {**summary(), "fixed_point": law(), "zero": _section()}
    listed = landing_rst(both).split("**Everything else**")[1]
    assert [c for c in CATEGORIES if f"**{c}**" in listed] == list(CATEGORIES)


def test_the_law_stands_beside_the_headline_with_its_picture():
    png = bytes(range(256)) * 20
    rst = landing_rst({**summary(), "fixed_point": law()}, png, png[::-1])
    law_at = rst.index("**Fixed-point law")
    assert rst.index("- **mirror**") < law_at < rst.index("law-picture") < rst.index("**Headline")
    line = rst[law_at:].splitlines()[0]
    assert "p*_G 0.030 [0.020, 0.040]" in line and '"stays at p_ref" 0.150' in line
    assert "exceeds it by +0.120 [+0.090, +0.150]" in line and "is resolved against" in line
    assert "0.030 [0.020, 0.040] within 0.03, and 0.20 [0.10, 0.30]" in line and ": met." in line
    html = publish_parts(rst, writer="html", settings_overrides={"report_level": 2})["body"]
    assert "system-message" not in html and 'class="law-picture"' in html
    assert "law-picture" not in landing_rst(summary(), png, png[::-1])  # no study, no picture
