"""Data sizes checked when the workflow loads: a size the files cannot hold names its
key, file and line before data_prepare could start (and Snakemake remove results/data/); one
epoch counts only the prompts GRPO trains on."""

import json

import pytest

from grpo_repro import config as cfg
from grpo_repro.data import sizes
from tests.helpers import ROOT, rehearsal

EXCERPT = ROOT / "workflow" / "resources" / "gsm8k"


def local_gsm8k(tmp_path, data):
    """The rehearsal's configuration on the excerpt's local files, then the user's `data` keys in
    a file of their own (mine.yaml)."""
    mine = tmp_path / "mine.yaml"
    local = {"train_path": str(EXCERPT / "train.jsonl"), "test_path": str(EXCERPT / "test.jsonl")}
    mine.write_text(
        "seed: 0\ndata:\n"
        + "".join(f"  {k}: {json.dumps(v)}\n" for k, v in {**local, **data}.items())
    )
    config = cfg.merge(rehearsal.load(), cfg.load_yaml(mine))
    return config, [ROOT / "config/config.yaml", *(ROOT / f for f in rehearsal.FILES), mine]


@pytest.mark.parametrize(
    "data,key,words",
    [
        ({"n_test": 100}, "data.n_test", "100 test problems asked, but .*test.jsonl holds 64"),
        ({"n_train": 60, "n_val": 8}, "data.n_train", "60 \\+ 8 training problems.*holds 64"),
        ({"n_train": None, "n_val": 64}, "data.n_val", "take all 64 .*nothing is left"),
    ],
)
def test_sizes_beyond_the_files_name_key_file_and_line(tmp_path, data, key, words):
    config, files = local_gsm8k(tmp_path, data)
    with pytest.raises(cfg.ConfigError, match=rf"'{key}' \(.*mine.yaml:\d.*{words}"):
        sizes.check_sizes(config, files)


def test_sizes_that_fit_pass_and_one_epoch_counts_training_prompts(tmp_path):
    config, files = local_gsm8k(tmp_path, {"n_train": None, "n_val": 8, "n_test": 64})
    assert sizes.check_sizes(config, files) == {"train": 64, "test": 64}
    assert sizes.n_epoch_prompts(config) == 56  # 64 - 8 validation problems, never trained on
    config["data"]["n_train"] = 40
    assert sizes.n_epoch_prompts(config) == 40


def test_a_bad_record_is_named_at_load(tmp_path):
    lines = (ROOT / "workflow/resources/gsm8k/train.jsonl").read_text().splitlines()
    bad = tmp_path / "train.jsonl"
    bad.write_text("\n".join(lines[:5] + ['{"question": "q", "answer": "no number"}']) + "\n")
    config, files = local_gsm8k(tmp_path, {"n_val": 0})
    config["data"]["train_path"] = str(bad)
    with pytest.raises(ValueError, match=r"train.jsonl:6: gold answer has no number"):
        sizes.check_sizes(config, files)


def test_hub_sizes_come_from_its_cached_metadata(tmp_path, offline_hub, monkeypatch):
    """The hub path reads the split sizes from the cached dataset at the pinned revision (the
    stand-in's 64, no assumed 7473); not cached: the key is named (a dry run assumes 7473)."""
    config, files = local_gsm8k(tmp_path, {"train_path": None, "n_val": 10})
    assert sizes.check_sizes(config, files)["train"] == 64
    assert sizes.n_epoch_prompts(config) == 54
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty"))
    with pytest.raises(ValueError, match="data.train_path.*python -m grpo_repro.prefetch"):
        sizes.check_sizes(config, files)
    assert sizes.check_sizes(config, files, check_hub=False)["train"] == 7473  # dry run only
