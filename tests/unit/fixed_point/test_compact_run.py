"""The default graph's compact fixed-point run, on its own evaluation tables (a copy of
results/fixed_point/{evaluate,kl} of a default run, tests/data/fixed_point_compact/, its
README.md names the commit): p*_G of h_G at the run's G passes the study's check against the
better baseline, and the same check fails when the prediction is computed with the population
map h (Thm 2-3 at finite group size: the check can fail)."""

from pathlib import Path

import pandas as pd
import pytest

from grpo_repro.dynamics import prediction as pred
from grpo_repro.fixed_point import aggregate, compare
from grpo_repro.fixed_point.runs import Run

DATA = Path(__file__).resolve().parents[2] / "data" / "fixed_point_compact"
EPS = 1e-5  # train.smoothing_eps of the run
RUN = Run("grpo", "k3_ratio", "compact", 2.0, 0, 8)  # fixed_point.compact of config/config.yaml


def read(name: str) -> pd.DataFrame:
    return pd.read_csv(DATA / name, dtype={"prompt_id": str})


def prompts() -> pd.DataFrame:
    steps = sorted(int(p.stem.split("_")[1]) for p in DATA.glob("step_*.csv"))
    tables = pd.concat([read(f"step_{s}.csv").assign(step=s) for s in steps])
    return compare.prompt_table(read("ref.csv"), tables, read("kl.csv"), RUN, EPS, RUN.group_size)


@pytest.fixture
def population_map(monkeypatch):
    """The prediction (and the noise floor, and the resampling) computed with h instead of h_G."""
    real = pred.orbit_limits
    monkeypatch.setattr(pred, "orbit_limits", lambda *a, group_size=None, **k: real(*a, **k))


def test_the_run_passes_its_check_with_h_g():
    table = prompts()
    (row,) = aggregate.summary_table(table, EPS, n_boot=200).to_dict("records")
    assert row["ratio_G"] < aggregate.AIM_RATIO, row  # the law's half of the aim
    assert row["ratio_G_hi"] < aggregate.AIM_RATIO, row  # ... decided by its interval
    assert row["gap_pred_G"] < row["gap_pred"] - 0.02  # h_G, not h, is what the plateau follows
    assert row["aim"] != aggregate.MISSED, row  # the gap's interval straddles 0.03 on this run
    res = aggregate.resolution_table(table, EPS, [], None, n_resamples=200)
    assert bool(res["resolved"].iloc[0]) and res["share_ratio"].iloc[0] > 0.9


def test_the_check_fails_with_the_population_map(population_map):
    table = prompts()
    (row,) = aggregate.summary_table(table, EPS, n_boot=200).to_dict("records")
    assert row["ratio_G"] >= aggregate.AIM_RATIO and row["aim"] == aggregate.MISSED, row
    res = aggregate.resolution_table(table, EPS, [], None, n_resamples=200)
    assert res["share_ratio"].iloc[0] < 0.1
