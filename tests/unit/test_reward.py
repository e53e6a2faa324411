"""The binary reward r(q, o) (Sec. 6): number normalisation, answer extraction, TRL reward function;
real GSM8K gold solutions from the shipped excerpt (always) and the full splits (optional extras)."""

import json

import pytest

from grpo_repro.reward import (
    extract_answer,
    gold_number,
    is_correct,
    make_reward_fn,
    normalize_number,
)
from tests.helpers import ROOT, full_gsm8k_split

EXCERPT = ROOT / "workflow" / "resources" / "gsm8k"  # first 64 lines of each split, shipped


@pytest.mark.parametrize(
    "text, expected",
    [
        ("5", "5"),
        ("  5 ", "5"),
        ("+5", "5"),
        ("-5", "-5"),
        ("\u22125", "-5"),
        ("5.00", "5"),
        ("5.", "5"),
        ("5.50", "5.5"),
        ("0.50", "0.5"),
        (".5", "0.5"),
        ("-.5", "-0.5"),
        ("007", "7"),
        ("0", "0"),
        ("-0", "0"),
        ("-0.00", "0"),
        ("100", "100"),
        ("1000000", "1000000"),
        ("1,234", "1234"),
        ("1,234,567.890", "1234567.89"),
        ("$1,234.00", "1234"),
        ("-$5", "-5"),
        ("$0.25", "0.25"),
        ("72.", "72"),
        ("50%", "50"),
        ("12.5%", "12.5"),
        ("$1,234.00.", "1234"),
        ("12345678901234567890123456789012.500", "12345678901234567890123456789012.5"),
    ],
)
def test_normalize_number(text, expected):
    assert normalize_number(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        ".",
        "$",
        "-",
        "abc",
        "five",
        "1e5",
        "inf",
        "nan",
        "3/4",
        "1,23",
        "12,34,567",
        "1.2.3",
        "5 apples",
        "$ 5",
        "--5",
        "0x10",
    ],
)
def test_normalize_number_rejects(text):
    assert normalize_number(text) is None


@pytest.mark.parametrize(
    "text, strict, lenient",
    [
        ("#### 72", "72", "72"),
        ("#### 72.", "72", "72"),
        ("####72", "72", "72"),
        ("#### -10", "-10", "-10"),
        ("#### $1,234.00", "1234", "1234"),
        ("#### 0.50", "0.5", "0.5"),
        ("#### 50%", "50", "50"),
        ("#### 18 dollars per day", "18", "18"),  # text after the number
        ("#### The answer is 18.", None, "18"),  # words between marker and number: no answer
        ("16 - 3 - 4 = 9 eggs\n9 * 2 = $18\n#### 18", "18", "18"),
        ("#### 18\nThat was easy, 3 steps.", "18", "3"),  # strict: only the ####-line counts
        ("#### 5\n#### 7", "5", "7"),  # several ####: the first one counts (lm-eval strict-match)
        ("#### 18\n\nQuestion: Tom has 2 apples. #### 5", "18", "5"),  # answered, then invented
        ("####\n#### 5", "5", "5"),  # the first #### has no number after it: the next one counts
        # Markdown headings of instruction-tuned models are no answer, whatever number they hold
        ("#### Step 1: add the apples\n2 + 3 = 5", None, "5"),
        ("#### Step 18: done\n#### 7", "7", "7"),
        ("#### Step 1\n3 + 4 = 7\n#### Step 2\n7 * 2 = 14\n#### 14", "14", "14"),
        ("### 5\n#### 6", "6", "6"),  # three hashes are not the marker
        ("#### \t 9 apples", "9", "9"),  # spaces and tabs between marker and number
        ("#### 1/2\n#### 5", "5", "5"),  # a fraction is no answer: the next marker counts
        ("#### 1/2", None, None),  # a fraction is not a number: neither 1 nor 2
        ("#### 12/5 apples", None, None),  # nor a number read from inside it
        ("half is 3/4 of 8", None, "8"),
        ("####\n72", None, "72"),  # the number is on the next line, not after ####
        ("The answer is 42", None, "42"),  # no ####
        ("no number here", None, None),
        ("", None, None),
        ("#### no number", None, None),
        ("16-3-4=9", None, "9"),  # a '-' between digits is subtraction, not a sign
        ("x = -3", None, "-3"),
        ("#### 2+3", "2", "3"),  # parsed, never evaluated
        ("#### __import__('os').system('echo 5')", None, "5"),
        ("costs $1,200 and then 1,2345", None, "2345"),
        ("the price was 3.50.", None, "3.5"),
        ("#### 1,234,567", "1234567", "1234567"),
    ],
)
def test_extract_answer(text, strict, lenient):
    assert extract_answer(text, "strict") == strict
    assert extract_answer(text, "lenient") == lenient


def test_unknown_mode_is_named():
    with pytest.raises(ValueError, match="'fuzzy'"):
        extract_answer("#### 1", "fuzzy")
    with pytest.raises(ValueError, match="'fuzzy'"):
        make_reward_fn("fuzzy")


@pytest.mark.parametrize(
    "completion, gold, mode, expected",
    [
        ("#### 1234", "1,234", "strict", True),
        ("#### $1,234.00", "1234", "strict", True),
        ("#### 1234.5", "1234", "strict", False),
        ("#### -7", "7", "strict", False),
        ("#### 72.", "72", "strict", True),
        ("so she makes 18 dollars", "18", "strict", False),
        ("so she makes 18 dollars", "18", "lenient", True),
        ("#### 18\n(check: 9 * 2)", "18", "lenient", False),
        ("", "18", "lenient", False),
    ],
)
def test_is_correct(completion, gold, mode, expected):
    assert is_correct(completion, gold, mode) is expected


def test_is_correct_rejects_non_numeric_gold():
    with pytest.raises(ValueError, match="not a number"):
        is_correct("#### 5", "five")


@pytest.mark.parametrize(
    "answer, expected",
    [
        ("2 + 3 = <<2+3=5>>5\n#### 5", "5"),
        ("#### 1,200", "1200"),
        ("It loses 10.\n#### -10", "-10"),
    ],
)
def test_gold_number(answer, expected):
    assert gold_number(answer) == expected


@pytest.mark.parametrize("answer", ["the answer is 5", "#### ", "#### five"])
def test_gold_number_without_number(answer):
    with pytest.raises(ValueError, match="####"):
        gold_number(answer)


def test_reward_fn_scores_the_completion_texts():
    """TRL passes the decoded completions of string prompts (the prompt sets render the chat
    template to a string, grpo_repro.data.sets)."""
    f = make_reward_fn("strict")
    assert f.__name__ == "gsm8k_strict"
    completions = ["#### 5", "#### 6", "thinking\n#### 5"]
    rewards = f(["q"] * 3, completions, ["5"] * 3, completion_ids=None, trainer_state=None)
    assert rewards == [1.0, 0.0, 1.0]
    assert all(isinstance(r, float) for r in rewards)


def test_reward_fn_lenient_and_length_check():
    f = make_reward_fn("lenient")
    assert f(["q", "q"], ["it is 5", "it is 6"], ["5", "5"]) == [1.0, 0.0]
    with pytest.raises(ValueError, match="2 completions but 1 gold"):
        f(["q", "q"], ["5", "5"], ["5"])


def _gold_solutions(split, source="excerpt"):
    """Gold solutions of a split: the shipped excerpt, or the full split (skipped if absent)."""
    if source == "excerpt":
        path = EXCERPT / f"{split}.jsonl"
    else:
        path = full_gsm8k_split(split, "the answer checker")
    return [json.loads(line)["answer"] for line in path.read_text().splitlines() if line.strip()]


SOURCES = [("excerpt", "test", 64), ("excerpt", "train", 64), ("full", "test", 1319)]
SOURCES += [("full", "train", 7473)]


@pytest.mark.parametrize("source, split, count", SOURCES)
@pytest.mark.parametrize("mode", ["strict", "lenient"])
def test_every_gold_solution_scores_itself_correct(source, split, count, mode):
    answers = _gold_solutions(split, source)
    assert len(answers) == count
    wrong = [i for i, a in enumerate(answers) if not is_correct(a, gold_number(a), mode)]
    assert wrong == []


@pytest.mark.parametrize("source", ["excerpt", "full"])
@pytest.mark.parametrize("mode", ["strict", "lenient"])
def test_gold_solutions_with_another_questions_gold_are_wrong(source, mode):
    answers = _gold_solutions("test", source)
    golds = [gold_number(a) for a in answers]
    n = len(answers)
    # Cyclic shift by one: a derangement (no solution keeps its own gold).
    pairs = [(i, (i + 1) % n) for i in range(n)]
    excluded = [(i, j) for i, j in pairs if golds[i] == golds[j]]
    print(
        f"\n{len(excluded)} of {n} pairs excluded (both questions share the gold number): "
        + ", ".join(f"test_{i:05d}/test_{j:05d}={golds[i]}" for i, j in excluded)
    )
    assert len(excluded) < n // 20
    scored = [(i, j) for i, j in pairs if golds[i] != golds[j]]
    right = [(i, j) for i, j in scored if is_correct(answers[i], golds[j], mode)]
    assert right == []
    assert len(scored) + len(excluded) == n
