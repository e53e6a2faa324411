"""The zero-success study's statistics and tables (grpo_repro.zero): Clopper-Pearson bounds and
pass@k against closed forms, screening and confirmation, per-checkpoint pooling, the extra held-out
problems; its summary and landing-page lines (grpo_repro.report.zero_text)."""

import pandas as pd
import pytest

from grpo_repro import zero
from grpo_repro.report import zero_text


@pytest.mark.parametrize("n", [1, 50, 369, 400, 1600])
def test_bound_at_zero_successes_is_the_closed_form(n):
    assert zero.upper_bound(0, n) == pytest.approx(1 - 0.025 ** (1 / n), rel=1e-10)


@pytest.mark.parametrize(
    "k,n,expected",  # closed forms and the issue's round numbers
    [(0, 50, 0.0711), (0, 369, 0.00995), (0, 400, 0.00918), (5, 5, 1.0), (1, 2, 0.98742)],
)
def test_bound_values(k, n, expected):
    assert zero.upper_bound(k, n) == pytest.approx(expected, abs=5e-5)


def test_pass_at_k_grid():
    assert zero.ks(400) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 400] and zero.ks(1) == [1]


def _table(rows):
    return pd.DataFrame(rows, columns=["prompt_id", "successes", "samples"])


def test_screen_then_confirm_keeps_only_fresh_zeros():
    screen = _table([("a", 0, 50), ("b", 3, 50), ("c", 0, 50)])
    cands = zero.candidates(screen, zero.HELD_OUT)
    assert list(cands["prompt_id"]) == ["a", "c"]  # the screen's zeros only
    fresh = _table([("c", 0, 400), ("a", 2, 400)])  # another order: matched by id
    out = zero.confirm(cands, fresh)
    assert list(out["zero"]) == [False, True]
    assert out["p_ref_upper"].iloc[1] == pytest.approx(zero.upper_bound(0, 400))
    assert out["p_ref_upper"].iloc[0] > out["p_ref_upper"].iloc[1]


def test_checkpoints_pool_prompts_and_count_those_above_the_bound():
    zeros = pd.DataFrame(
        {"prompt_id": ["a", "b"], "split": "held_out", "p_ref_upper": [0.01, 0.01]}
    )
    measured = pd.DataFrame(
        [
            ("ref", 0, "a", 0, 400),
            ("ref", 0, "b", 1, 400),
            ("grpo/seed_0", 40, "a", 4, 400),  # 1.0%: not above 0.01
            ("grpo/seed_0", 40, "b", 5, 400),  # 1.25%: above
        ],
        columns=["run", "step", "prompt_id", "successes", "samples"],
    )
    t = zero.checkpoints(measured, zeros).set_index("run")
    assert t.loc["ref", "successes"] == 1 and t.loc["ref", "samples"] == 800
    assert t.loc["ref", "left_zero"] == 0 and t.loc["grpo/seed_0", "left_zero"] == 1
    assert t.loc["grpo/seed_0", "p_hat"] == pytest.approx(9 / 800)
    assert t.loc["grpo/seed_0", "ci_low"] < 9 / 800 < t.loc["grpo/seed_0", "ci_high"]
    assert (t["predicted_left_zero"] == 0).all()
    passk = zero.pass_curves(measured, zeros, {"grpo/seed_0": 40})
    last = passk.sort_values("k").groupby("run").tail(1).set_index("run")["pass_at_k"]
    assert last["ref"] == pytest.approx(0.5) and last["grpo/seed_0"] == pytest.approx(1.0)


def test_extra_held_out_problems_are_new_distinct_and_seeded(default_config):
    from grpo_repro.data.organism import TaskSpec, generate

    org = default_config["organism"]
    spec = TaskSpec(org["min_steps"], org["max_steps"], org["max_operand"], org["max_value"])
    existing = generate({"train": 300, "test": 100}, spec, seed=default_config["seed"])
    out = zero.extra_held_out(default_config, 200, list(existing.values()))
    seen = {r["question"] for recs in existing.values() for r in recs}
    assert len(out) == 200 and not {r["question"] for r in out} & seen
    assert len({r["question"] for r in out}) == 200
    assert out[0]["prompt_id"] == "held_out_00000" and out[0]["prompt"].startswith(
        out[0]["question"]
    )
    assert out == zero.extra_held_out(default_config, 200, list(existing.values()))
    assert zero.extra_held_out(default_config, 0, []) == []


def _section():
    run = {"step": 160, "prompts": 2, "samples": 800, "ci_low": 0.0, "ci_high": 0.01}
    runs = {
        "ref": {**run, "step": 0, "successes": 1, "p_hat": 1 / 800, "left_zero": 0},
        "grpo/seed_0": {**run, "successes": 6, "p_hat": 6 / 800, "left_zero": 1},
        "control:grpo/seed_0": {**run, "successes": 80, "p_hat": 0.1, "left_zero": 2},
    }
    return {
        "samples": 400,
        "predicted_left_zero": 0,
        "splits": {
            "held_out": {"screened": 9, "confirmed": 2, "p_ref_upper": 0.0092, "runs": runs,
                         "pass_at_max_k": {"ref": {"k": 400, "pass_at_k": 0.5}}},
            "train": {"screened": 6, "confirmed": 0, "p_ref_upper": None, "runs": {},
                      "pass_at_max_k": {}},
        },  # fmt: skip
        "control": {"successes": 80, "samples": 2560, "steps_checked_still": 32,
                    "first_success_step": 33, "visits_per_prompt": 64.0, "prompts": 2},
    }  # fmt: skip


def test_landing_line_puts_the_prediction_beside_the_runs_and_the_control():
    (line, blank) = zero_text.landing(_section())
    assert blank == "" and "none leaves zero" in line
    assert "held_out: 2 of 9 screened prompts confirmed" in line
    assert "the 1 GRPO runs' final checkpoints 0.75% [0.34%, 1.63%]" in line  # control: not one
    assert "1 of 2 prompt-run pairs above it" in line
    assert "train: none of 6 screened prompts confirmed" in line
    assert "through the 32 steps before its first sampled success; 80 successes" in line
    assert zero_text.landing(None) == [] and zero_text.markdown(None) == []


def test_markdown_lists_every_run_and_the_empty_split():
    md = "\n".join(zero_text.markdown(_section()))
    assert "| held_out | 9 / 2 | grpo/seed_0 | 160 | 0.75%" in md
    assert "| train | 6 / 0 | - |" in md and "(first at step 33)" in md


def test_no_zero_confirmed_gives_empty_tables_and_says_so():
    """Every candidate had a success in its fresh samples: the tables are empty (with their
    columns), and the summary and landing page say that none was confirmed."""
    prompts = zero.confirm(
        zero.candidates(_table([("a", 0, 50)]), zero.HELD_OUT), _table([("a", 3, 400)])
    )
    measured = pd.DataFrame(columns=zero.MEASURED)
    zeros = prompts[prompts["zero"]]
    table = zero.checkpoints(measured, zeros)
    passk = zero.pass_curves(measured, zeros, {})
    assert table.empty and "left_zero" in table.columns and passk.empty and "k" in passk.columns
    s = zero.section(prompts, table, passk, {"prompts": 0}, 400, 1.0)
    assert s["splits"]["held_out"] == {**s["splits"]["held_out"], "screened": 1, "confirmed": 0}
    assert "held_out: none of 1 screened prompts confirmed" in zero_text.landing(s)[0]
    assert "| held_out | 1 / 0 | - |" in "\n".join(zero_text.markdown(s))
