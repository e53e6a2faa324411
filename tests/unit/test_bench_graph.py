"""workflow/benchmarks/bench_graph.py: the evaluation stage's breakdown per kind of task,
from the tables' metadata, on a made-up results tree with known sums."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench_graph():
    spec = importlib.util.spec_from_file_location(
        "bench_graph", ROOT / "workflow" / "benchmarks" / "bench_graph.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _meta(path: Path, split: str, seconds: float, samples: int = 50, n_prompts: int = 10):
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"split": split, "samples": samples, "n_prompts": n_prompts}
    meta["timing"] = {"seconds": seconds}
    path.write_text(json.dumps(meta))


@pytest.mark.parametrize(
    "files, expected",
    [
        ([], {}),
        (
            [
                ("grpo/seed_0/test/step_40.json", "test", 2.0),
                ("grpo/seed_0/test/step_80.json", "test", 3.0),
                ("grpo/seed_0/train/step_80.json", "train", 1.0),
                ("grpo/seed_0/val/step_80.json", "val", 4.0),
                ("grpo/seed_0/test/step_80_T0.5.json", "test", 5.0),
                ("grpo/seed_0/test/step_80_T0.json", "test", 0.5),
                ("ref/val/step_0_T0.3.json", "val", 6.0),
            ],
            {
                ("eval.temperature", "test"): (2, 5.0),
                ("eval.temperature", "train"): (1, 1.0),
                ("eval.temperature", "val"): (1, 4.0),
                ("other temperatures", "test"): (2, 5.5),
                ("other temperatures", "val"): (1, 6.0),
            },
        ),
    ],
)
def test_eval_tasks_sums_seconds_per_kind_and_split(bench_graph, tmp_path, files, expected):
    for rel, split, seconds in files:
        _meta(tmp_path / "results" / "evaluate" / rel, split, seconds)
    ev = bench_graph.eval_tasks(tmp_path)
    got = {(r.kind, r.split): (r.tasks, r.seconds) for r in ev.itertuples()}
    assert got == expected  # sums of halves and integers: exact in binary
    if files:
        assert ev["completions"].sum() == 50 * 10 * len(files)
