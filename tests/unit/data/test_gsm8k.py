"""GSM8K loading (Sec. 6): JSONL errors name file and line; local and hub loading. Real GSM8K: the
excerpt shipped in workflow/resources/gsm8k (always run), the full splits when a local copy exists
beside the repository (optional extras, skipped without it)."""

import json

import pytest

from grpo_repro.data.source_records import gsm8k
from grpo_repro.data.source_records.gsm8k import DataError, load_gsm8k, read_jsonl
from grpo_repro.io import write_jsonl
from tests.helpers import ROOT, full_gsm8k_split

EXCERPT = ROOT / "workflow" / "resources" / "gsm8k"  # first 64 lines of each split, shipped
GOOD = json.dumps({"question": "Tom has 3 apples and buys 2. How many?", "answer": "3+2=5\n#### 5"})


def _shared(split):
    return full_gsm8k_split(split, "the loader")


@pytest.mark.parametrize(
    "content, line, what",
    [
        ("", 1, "empty"),
        ("\n\n", 1, "empty"),
        (GOOD + "\n{not json\n", 2, "malformed JSON"),
        (GOOD + "\n" + GOOD + "\n[1, 2]\n", 3, "expected a JSON object"),
        (json.dumps({"answer": "#### 5"}) + "\n", 1, "'question'"),
        (GOOD + "\n" + json.dumps({"question": "q?"}) + "\n", 2, "'answer'"),
        (GOOD + "\n" + json.dumps({"question": "q?", "answer": 5}) + "\n", 2, "'answer'"),
        (
            GOOD + "\n\n" + json.dumps({"question": "q?", "answer": "it is 5"}) + "\n",
            3,
            "no number after '####'",
        ),
        (json.dumps({"question": "q?", "answer": "#### five"}) + "\n", 1, "no number after '####'"),
    ],
)
def test_read_jsonl_errors_name_file_and_line(tmp_path, content, line, what):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(DataError, match=what) as info:
        read_jsonl(path)
    assert f"{path}:{line}:" in str(info.value)


def test_read_jsonl_non_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(GOOD.encode() + b"\n\xff\xfe\n")
    with pytest.raises(DataError, match=f"{path}:2: not UTF-8"):
        read_jsonl(path)


def test_read_jsonl_missing_file_names_file(tmp_path):
    path = tmp_path / "absent.jsonl"
    with pytest.raises(DataError, match="file not found") as info:
        read_jsonl(path)
    assert str(path) in str(info.value)
    assert '"question"' in str(info.value)  # says what the file should hold


def test_write_then_load_roundtrip(tmp_path):
    rows = [{"question": f"q{i}? ünïcode", "answer": f"so\n#### {i},000"} for i in range(1, 4)]
    path = tmp_path / "sub" / "small.jsonl"
    write_jsonl(path, rows)
    assert [p.name for p in path.parent.iterdir()] == ["small.jsonl"]  # no temp file left
    assert read_jsonl(path) == rows
    loaded = load_gsm8k("train", local_path=path, n=2)
    assert loaded == [
        {
            "prompt_id": "train_00000",
            "question": rows[0]["question"],
            "answer": rows[0]["answer"],
            "gold": "1000",
        },
        {
            "prompt_id": "train_00001",
            "question": rows[1]["question"],
            "answer": rows[1]["answer"],
            "gold": "2000",
        },
    ]
    with pytest.raises(DataError, match="first 4 problems but the split holds 3"):
        load_gsm8k("train", local_path=path, n=4)
    with pytest.raises(ValueError, match="positive"):
        load_gsm8k("train", local_path=path, n=0)


def test_write_jsonl_failure_leaves_old_file(tmp_path):
    path = tmp_path / "out.jsonl"
    write_jsonl(path, [{"a": 1}])

    def rows():
        yield {"a": 2}
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        write_jsonl(path, rows())
    assert path.read_text() == '{"a": 1}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


@pytest.mark.parametrize("split, first_gold", [("train", "72"), ("test", "18")])
def test_load_shipped_excerpt(split, first_gold):
    """The real-data loader on real GSM8K, offline, in every test run (no skip)."""
    path = EXCERPT / f"{split}.jsonl"
    records = load_gsm8k(split, local_path=path)
    assert len(records) == 64
    assert [r["prompt_id"] for r in records] == [f"{split}_{i:05d}" for i in range(64)]
    assert all(set(r) == {"prompt_id", "question", "answer", "gold"} for r in records)
    assert records[0]["gold"] == first_gold  # Natalia's clips (train), Janet's ducks (test)
    assert len({r["question"] for r in records}) == 64
    assert load_gsm8k(split, local_path=path, n=10) == records[:10]
    with pytest.raises(DataError, match="first 65 problems but the split holds 64"):
        load_gsm8k(split, local_path=path, n=65)


def test_excerpt_licence_and_provenance():
    assert "MIT License" in (EXCERPT / "LICENSE").read_text()
    assert "Copyright (c) 2021 OpenAI" in (EXCERPT / "LICENSE").read_text()
    readme = (EXCERPT / "README.md").read_text()
    assert "openai/gsm8k" in readme and "first 64 lines" in readme


@pytest.mark.parametrize("split", ["train", "test"])
def test_excerpt_is_the_head_of_the_full_split(split):
    """Optional extra: the excerpt is lines 1-64 of the full split, byte for byte."""
    full = _shared(split).read_bytes().splitlines(keepends=True)
    assert (EXCERPT / f"{split}.jsonl").read_bytes() == b"".join(full[:64])


@pytest.mark.parametrize("split, count", [("train", 7473), ("test", 1319)])
def test_load_shared_local_files(split, count):
    records = load_gsm8k(split, local_path=_shared(split))
    assert len(records) == count
    assert records[0]["prompt_id"] == f"{split}_00000"
    assert records[-1]["prompt_id"] == f"{split}_{count - 1:05d}"
    assert len({r["prompt_id"] for r in records}) == count
    assert all(set(r) == {"prompt_id", "question", "answer", "gold"} for r in records)
    if split == "test":
        assert records[0]["gold"] == "18"  # Janet's ducks
    assert len(load_gsm8k(split, local_path=_shared(split), n=10)) == 10


def test_an_uncached_hub_split_names_the_config_key_and_the_prefetch(tmp_path, monkeypatch):
    """Jobs never reach the hub: a split that the local cache lacks is a DataError naming the
    local-file key, the prefetch and the JSONL format, not a download."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty"))
    with pytest.raises(DataError) as info:
        load_gsm8k("test")
    msg = str(info.value)
    assert "data.test_path" in msg and "python -m grpo_repro.prefetch" in msg
    assert '"question"' in msg and "####" in msg  # the JSONL format


def test_hub_split_from_the_cache_at_its_revision(offline_hub):
    """The cached split is read at the pinned revision; another revision is not silently taken."""
    rev = "740312add88f781978c0658806c59bc2815b9866"  # config/paper.yaml's data.hub_revision
    records = load_gsm8k("test", revision=rev)
    assert len(records) == 64 and records[0]["gold"] == "18"  # the excerpt: Janet's ducks
    with pytest.raises(DataError, match="at revision " + "1" * 40):
        load_gsm8k("test", revision="1" * 40)


def test_hub_rows_are_checked(monkeypatch):
    from grpo_repro import hub

    rows = [{"question": "q?", "answer": "#### 5"}, {"question": "q?", "answer": "none"}]
    monkeypatch.setattr(hub, "dataset_split", lambda *a: rows)
    with pytest.raises(DataError, match=r"openai/gsm8k\[test\] row 2"):
        gsm8k.load_gsm8k("test")
    monkeypatch.setattr(hub, "dataset_split", lambda *a: rows[:1])
    assert gsm8k.load_gsm8k("test")[0]["gold"] == "5"
