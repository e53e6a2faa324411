"""The model organism: generated problems are correct by construction, splits are disjoint, and
the word-level tokenizer keeps every number as one token."""

import re

import pytest

from grpo_repro.data.organism import TaskSpec, generate, make_problem
from grpo_repro.data.tokenizer import build_tokenizer
from grpo_repro.reward import gold_number, is_correct


@pytest.fixture(scope="module")
def splits():
    return generate(3000, 200, TaskSpec(), seed=0)


def test_answers_correct_by_construction(splits):
    for rec in splits[0] + splits[1]:
        value = int(re.search(r"has (\d+)", rec["question"]).group(1))
        for line in rec["answer"].splitlines()[:-1]:
            a, op, b, _, c = line.split()
            assert int(a) == value
            value = {"+": int(a) + int(b), "-": int(a) - int(b), "*": int(a) * int(b)}[op]
            assert value == int(c) and 0 <= value <= 999
        assert gold_number(rec["answer"]) == str(value) == rec["gold"]
        assert is_correct(rec["answer"], rec["gold"])


def test_no_overlap_between_train_and_test(splits):
    train, test = splits
    assert not {r["question"] for r in train} & {r["question"] for r in test}
    assert not {r["answer"] for r in train} & {r["answer"] for r in test}
    assert len({r["prompt_id"] for r in train + test}) == len(train) + len(test)


def test_seeded_and_difficulty_knob():
    assert generate(50, 10, TaskSpec(), 3) == generate(50, 10, TaskSpec(), 3)
    assert generate(50, 10, TaskSpec(), 3) != generate(50, 10, TaskSpec(), 4)
    import random

    rng = random.Random(0)
    one = [make_problem(rng, TaskSpec(1, 1, 9)) for _ in range(50)]
    assert all(r["steps"] == 1 and r["answer"].count("\n") == 1 for r in one)
    with pytest.raises(ValueError, match="min_steps"):
        TaskSpec(3, 2)


def test_tokenizer_numbers_are_single_tokens(splits):
    texts = [r["question"] + "\n" + r["answer"] for r in splits[0][:200]]
    tok = build_tokenizer(texts)
    ids = tok("Tom has 123 apples.\n#### 999")["input_ids"]
    pieces = tok.convert_ids_to_tokens(ids)
    assert pieces == ["Tom", "has", "123", "apples", ".", "\n", "####", "999"]
    assert tok.unk_token_id not in tok(texts[0])["input_ids"]
    assert is_correct(tok.decode(tok(splits[0][0]["answer"])["input_ids"]), splits[0][0]["gold"])
