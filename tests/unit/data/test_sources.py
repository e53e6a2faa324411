"""The data source registry (grpo_repro.data.sources): every reader dispatches on the Source of
data.source, so a third source registered in one place runs data preparation end to end."""

import json

import pytest

from grpo_repro import config as cfg
from grpo_repro import io
from grpo_repro.config_checks import load_schema
from grpo_repro.data import prepare, sizes, sources
from grpo_repro.data.sets import check_sources
from tests.helpers import ROOT


def test_the_schema_names_the_registered_sources():
    enum = load_schema()["properties"]["data"]["properties"]["source"]["enum"]
    assert sorted(enum) == sorted(sources.SOURCES)


def test_shipped_sources():
    organism, gsm8k = sources.SOURCES["organism"], sources.SOURCES["gsm8k"]
    assert organism.path_keys == {} and organism.hub_config is None and organism.word_level
    assert gsm8k.path_keys == {"train": "train_path", "test": "test_path"}
    assert gsm8k.gold("3 + 4 = 7\n#### 7") == "7"  # GSM8K's marker (reward.gold_number)
    paper = cfg.load(ROOT / "config" / "paper.yaml")["data"]
    local = {**paper, "train_path": "train.jsonl", "test_path": "test.jsonl"}
    assert gsm8k.hub_id(local) is None  # both splits local: no hub
    assert gsm8k.hub_id({**local, "test_path": None}) == "openai/gsm8k"
    rev = paper["hub_revision"]
    assert gsm8k.origin({**local, "test_path": None}, "test") == f"openai/gsm8k@{rev}[test]"


def tiny_rows(data: dict, split: str) -> list[dict]:
    """A third answer format: the gold number is the last word ("... The answer is 7")."""
    return io.read_jsonl(data[sources.PATH_KEYS[split]], required=("question", "answer"))


TINY = sources.Source(
    "tiny",
    "Tiny",
    rows=tiny_rows,
    path_keys=sources.PATH_KEYS,
    file_format="fields question, answer",
    gold=lambda answer: answer.rsplit(" ", 1)[-1],
    word_level=True,
)


@pytest.fixture
def tiny(tmp_path, monkeypatch, default_config):
    """The default configuration on the source `tiny`: 5 training and 3 test problems."""
    monkeypatch.setitem(sources.SOURCES, "tiny", TINY)
    paths = {}
    for split, n in (("train", 5), ("test", 3)):
        rows = [
            {"question": f"what is {i} plus {i + 1} ?", "answer": f"The answer is {2 * i + 1}"}
            for i in range(n)
        ]
        paths[split] = tmp_path / f"{split}.jsonl"
        paths[split].write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = cfg.merge(
        default_config,
        {
            "data": {
                "source": "tiny",
                "train_path": str(paths["train"]),
                "test_path": str(paths["test"]),
                "n_train": None,
                "n_val": 1,
                "n_test": 2,
                "train_pool": 2,
            }
        },
    )
    return config


def test_a_third_source_prepares_the_prompt_sets(tiny, tmp_path):
    check_sources(tiny)  # its local files exist
    assert sizes.check_sizes(tiny) == {"train": 5, "test": 3}  # from its files
    assert sizes.n_epoch_prompts(tiny) == 4  # 5 training problems less the validation one
    out = tmp_path / "data"
    outputs = {k: str(out / f"{k}.jsonl") for k in ("train", "val", "test", "pool", "sft")} | {
        "stats": str(out / "splits.json"),
        "tokenizer": str(out / "tokenizer"),
    }
    stats = prepare.prepare(tiny, outputs)
    assert {k: v["n"] for k, v in stats.items()} == {
        "train": 4,
        "val": 1,
        "test": 2,
        "pool": 2,
        "sft": 4,
    }
    train = io.read_jsonl(outputs["train"])
    assert [r["gold"] for r in train] == ["1", "3", "5", "7"]  # its own answer format
    assert train[0]["prompt"].startswith("what is 0 plus 1 ?")
    assert [r["prompt_id"] for r in io.read_jsonl(outputs["val"])] == ["val_00000"]
    assert [r["question"] for r in io.read_jsonl(outputs["test"])][-1] == "what is 1 plus 2 ?"


def test_a_third_sources_sizes_are_checked_with_its_files(tiny, tmp_path):
    tiny["data"]["n_test"] = 4
    with pytest.raises(cfg.ConfigError, match=r"4 test problems asked, but .*test.jsonl holds 3"):
        sizes.check_sizes(tiny)


def test_a_path_of_a_source_without_files_is_refused(default_config):
    """The organism reads no file: a path set for it names the key (an overlay without its base)."""
    default_config["data"]["test_path"] = "workflow/resources/gsm8k/test.jsonl"
    with pytest.raises(cfg.ConfigError, match=r"'data.test_path'.*data.source organism reads no"):
        cfg.check(default_config)


def test_each_source_is_a_module_of_its_own():
    """SOURCES holds every module of grpo_repro.data.source_records, each by its module's name."""
    folder = ROOT / "workflow/src/grpo_repro/data/source_records"
    assert sorted(sources.SOURCES) == sorted(
        p.stem for p in folder.glob("*.py") if p.stem != "__init__"
    )
    assert sources.record_module("gsm8k") == "grpo_repro.data.source_records.gsm8k"
