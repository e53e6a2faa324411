"""The run and path model (grpo_repro.runs): one results tree's paths, the default graph's run
table and the wildcard constraint built from a table's names."""

import re

import pytest

from grpo_repro.runs import REF, REPLICATE_ROOT, Tree, constraint, grpo_runs, run_name


@pytest.mark.parametrize(
    "call, want",
    [
        (lambda t: t.data("train_pool"), "R/data/train_pool.jsonl"),
        (lambda t: t.split_file("train"), "R/data/train_pool.jsonl"),  # the tracked pool
        (lambda t: t.split_file("val"), "R/data/val.jsonl"),
        (lambda t: t.ref_model(), "R/train/ref/model"),
        (lambda t: t.run_json("grpo/seed_1"), "R/train/grpo/seed_1/run.json"),
        (lambda t: t.train_log("grpo/seed_1"), "R/train/grpo/seed_1/train_log.csv"),
        (lambda t: t.checkpoint("grpo/seed_1", 60), "R/train/grpo/seed_1/checkpoints/step_60"),
        (lambda t: t.table(REF, "test", 0), "R/evaluate/ref/test/step_0.csv"),
        (
            lambda t: t.table("m/seed_0", "val", 80, "json", 0.7),
            "R/evaluate/m/seed_0/val/step_80_T0.7.json",
        ),
        (
            lambda t: t.table("m/seed_0", "val", 80, "csv", 1.0),
            "R/evaluate/m/seed_0/val/step_80_T1.csv",
        ),
        (
            lambda t: t.table("m/seed_0", "val", 80, "csv", 0),
            "R/evaluate/m/seed_0/val/step_80_T0.csv",
        ),
    ],
)
def test_tree_paths(call, want):
    assert call(Tree("R")) == want


def test_checkpoints_leave_out_pi_ref():
    assert Tree("R").checkpoints("g/seed_0", [0, 20, 40]) == {
        20: "R/train/g/seed_0/checkpoints/step_20",
        40: "R/train/g/seed_0/checkpoints/step_40",
    }


def test_grpo_runs_and_the_replicate_root():
    table = grpo_runs(["grpo", "mirror"], [0, 2])
    assert list(table) == ["grpo/seed_0", "grpo/seed_2", "mirror/seed_0", "mirror/seed_2"]
    assert table["mirror/seed_2"].variant == "mirror" and table["mirror/seed_2"].seed == 2
    assert run_name("grpo", 2) == table["grpo/seed_2"].name
    assert REPLICATE_ROOT.format(results="results", rep=3) == "results/replicates/seed_3"


def test_constraint_matches_exactly_the_names():
    names = ["grpo/seed_1", "grpo/seed_10", "dr_grpo/seed_1", "x.y/seed_1"]
    pattern = re.compile(rf"^(?:{constraint(names)})$")
    assert all(pattern.match(n) for n in names)
    for other in ("grpo/seed_2", "grpo/seed_1/x", "xzy/seed_1", "mirror_dr/seed_1"):
        assert not pattern.match(other), other
    assert not re.match(rf"^(?:{constraint([])})$", "")  # no names: nothing matches
