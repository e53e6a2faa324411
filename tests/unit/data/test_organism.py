"""The model organism: generated problems are correct by construction, the splits are disjoint and
identically distributed (their difficulty mixes agree within sampling noise: a chi-square test that
fails on the old generator's cut-before-shuffle split), the noisy teacher slips but keeps the gold,
and the word-level tokenizer keeps every number as one token."""

import random
import re

import numpy as np
import pytest
from scipy.stats import chi2_contingency

from grpo_repro.data.organism import (
    SPLITS,
    TaskSpec,
    chain,
    generate,
    make_problem,
    noisy_solution,
    step_mix,
)
from grpo_repro.data.prepare import build_tokenizer
from grpo_repro.reward import gold_number, is_correct

SPEC = TaskSpec(1, 3, 9, 99)
SIZES = {"test": 300, "val": 300, "train": 600, "sft": 3000}


@pytest.fixture(scope="module")
def splits():
    return generate(SIZES, SPEC, seed=0)


def test_answers_correct_by_construction(splits):
    for rec in [r for recs in splits.values() for r in recs]:
        value = int(re.search(r"has (\d+)", rec["question"]).group(1))
        assert value == rec["start"]
        for line in rec["answer"].splitlines()[:-1]:
            a, op, b, _, c = line.split()
            assert int(a) == value
            value = {"+": int(a) + int(b), "-": int(a) - int(b), "*": int(a) * int(b)}[op]
            assert value == int(c) and 0 <= value <= 99
        assert gold_number(rec["answer"]) == str(value) == rec["gold"]
        assert chain(rec["start"], rec["ops"])[1] == value
        assert is_correct(rec["answer"], rec["gold"])


def test_splits_are_disjoint_and_sized(splits):
    assert {k: len(v) for k, v in splits.items()} == SIZES
    questions = [r["question"] for recs in splits.values() for r in recs]
    assert len(set(questions)) == len(questions)
    ids = [r["prompt_id"] for recs in splits.values() for r in recs]
    assert len(set(ids)) == len(ids) and splits["val"][0]["prompt_id"] == "val_00000"


def _mix_p_value(a, b, max_steps=3) -> float:
    counts = np.array(
        [[sum(r["steps"] == k for r in recs) for k in range(1, max_steps + 1)] for recs in (a, b)]
    )
    return float(chi2_contingency(counts).pvalue)


def test_splits_share_one_difficulty_mix(splits):
    """Every split against the SFT split: no difference in the share of 1/2/3-step problems."""
    for name in ("test", "val", "train"):
        assert _mix_p_value(splits[name], splits["sft"]) > 1e-3, (name, step_mix(splits[name], 3))


def test_mix_test_fails_when_splits_are_cut_before_shuffling():
    """The old generator took the test split from the first problems drawn: the one-step
    problems (few distinct ones) ran out early, so the mixes differ and the test catches it."""
    rng, seen, out = random.Random(0), set(), []
    spec = TaskSpec(1, 3, 9, 99)
    while len(out) < 3300:
        prob = make_problem(rng, spec)
        keys = {"q:" + prob["question"], "a:" + prob["answer"]}
        if keys & seen:
            continue
        seen |= keys
        out.append(prob)
    assert _mix_p_value(out[:300], out[300:]) < 1e-3


def test_seeded_and_difficulty_knob():
    small = {"test": 10, "train": 50}
    assert generate(small, TaskSpec(), 3) == generate(small, TaskSpec(), 3)
    assert generate(small, TaskSpec(), 3) != generate(small, TaskSpec(), 4)
    assert set(generate(small, TaskSpec(), 3)) == set(SPLITS)
    rng = random.Random(0)
    one = [make_problem(rng, TaskSpec(1, 1, 9)) for _ in range(50)]
    assert all(r["steps"] == 1 and r["answer"].count("\n") == 1 for r in one)
    with pytest.raises(ValueError, match="min_steps"):
        TaskSpec(3, 2)


def test_noisy_teacher_slips_and_continues_from_the_slip(splits):
    rng = random.Random(1)
    recs = splits["sft"][:2000]
    noisy = [noisy_solution(r, rng, 0.25, [-2, -1, 1, 2], 99) for r in recs]
    wrong = [n for n, r in zip(noisy, recs) if not is_correct(n, r["gold"])]
    n_eq = sum(len(r["ops"]) for r in recs)
    assert 0.2 < len(wrong) / len(recs) < 0.7  # about 1 - 0.75^steps of the solutions end wrong
    for text in noisy:  # each line continues from the previous (slipped) result
        lines = text.splitlines()[:-1]
        for prev, line in zip(lines, lines[1:]):
            assert prev.split()[-1] == line.split()[0]
        assert all(0 <= int(x.split()[-1]) <= 99 for x in lines)
    assert n_eq > 0 and noisy_solution(recs[0], rng, 0.0, [1], 99) == recs[0]["answer"]


def test_tokenizer_numbers_are_single_tokens(splits):
    texts = [r["question"] + "\n" + r["answer"] for r in splits["sft"][:200]]
    tok = build_tokenizer(texts, max_value=99)
    ids = tok("Tom has 12 apples.\n#### 99")["input_ids"]
    pieces = tok.convert_ids_to_tokens(ids)
    assert pieces == ["Tom", "has", "12", "apples", ".", "\n", "####", "99"]
    assert tok.unk_token_id not in tok(texts[0])["input_ids"]
    first = splits["sft"][0]
    assert is_correct(tok.decode(tok(first["answer"])["input_ids"]), first["gold"])


# the misconception knob (organism.teacher_misconception)
# ---------------------------------------------------------------------------------------------
def _triple_problem():
    return {
        "start": 4,
        "ops": [["+", 2], ["*", 3], ["-", 1]],
        "answer": "4 + 2 = 6\n6 * 3 = 18\n18 - 1 = 17\n#### 17",
    }


def test_misconception_always_writes_a_tripling_as_a_doubling_at_q_1():
    from grpo_repro.data.organism import in_misconception_class, noisy_solution

    rec = _triple_problem()
    text = noisy_solution(rec, random.Random(0), 0.0, [1], 99, q=1.0)
    assert text == "4 + 2 = 6\n6 * 2 = 12\n12 - 1 = 11\n#### 11"  # the chain goes on from 2v
    assert in_misconception_class(rec)
    other = {"start": 4, "ops": [["*", 2], ["+", 1]], "answer": "4 * 2 = 8\n8 + 1 = 9\n#### 9"}
    assert not in_misconception_class(other)
    assert noisy_solution(other, random.Random(0), 0.0, [1], 99, q=1.0) == other["answer"]


def test_misconception_rate_and_no_draw_spent_at_q_0():
    from grpo_repro.data.organism import noisy_solution

    rng = random.Random(1)
    texts = [noisy_solution(_triple_problem(), rng, 0.0, [1], 99, q=0.6) for _ in range(4000)]
    share = sum("6 * 2 = 12" in t for t in texts) / len(texts)
    assert abs(share - 0.6) < 0.03  # binomial sd 0.008
    # q = 0: the slips alone, draw for draw (the SFT data of an organism without the knob)
    a, b = random.Random(5), random.Random(5)
    for _ in range(50):
        assert noisy_solution(_triple_problem(), a, 0.3, [-1, 1], 99) == noisy_solution(
            _triple_problem(), b, 0.3, [-1, 1], 99, q=0.0
        )
