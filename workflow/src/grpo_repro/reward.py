"""The verifiable binary reward r(q, o) in {0, 1} of the GSM8K experiment (Sec. 6).

r(q, o) = 1 when the number extracted from the completion o equals the gold number of q, else 0.
Two extraction modes (config key data.answer_mode):

* ``strict``:  the number right after the first ``####`` that is followed by one (GSM8K's answer
               marker; spaces between them, nothing else), as lm-evaluation-harness's GSM8K
               "strict-match" takes the first ``#### <number>`` match. A Markdown heading is no
               answer: ``#### Step 18: done`` then ``#### 7`` gives 7, never 18 or the step
               number. The first answer counts: a completion that answers and then goes on
               ("... #### 18\n\nQuestion: ... #### 5") is scored on the answer it gave (18),
               not on a problem it invented afterwards. No such match gives no answer.
* ``lenient``: the last number anywhere in the text.

Numbers are compared after `normalize_number`, exactly (decimal.Decimal, no floats):
``$1,234.00`` == ``1234``, ``0.50`` == ``.5``, ``+7`` == ``007`` == ``7.``, ``-0`` == ``0``.
A trailing ``%`` is dropped, not divided by 100 (GSM8K golds state percentages as the bare
number). Fractions (``3/4``), scientific notation and words are not numbers here: neither side of
a fraction is read as a number (``#### 1/2`` gives no answer, never 1), and a number is never read
from the middle of another one.
Model output is only parsed with regular expressions, never evaluated.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal, InvalidOperation, localcontext

MODES = ("strict", "lenient")

# A number token inside free text. The sign counts only when it does not follow a word character
# or closing bracket, so "16-3" reads as 16 and 3 (subtraction), while "is -3" reads as -3.
_BODY = r"(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?|\.\d+"
_NUMBER = re.compile(rf"(?<!\d)(?<!\d/)(?:(?<![\w)\]])[-+\u2212])?\$?(?:{_BODY})%?(?![\d/])")
_FULL = re.compile(rf"([-+])?\$?({_BODY})")
# the strict answer: the marker, spaces or tabs (never a newline), then a number
_MARKED = re.compile(rf"####[ \t]*({_NUMBER.pattern})")


def normalize_number(s: str) -> str | None:
    """Canonical decimal string of the number `s` (e.g. "$1,234.50" -> "1234.5"), or None."""
    t = s.strip().replace("\u2212", "-").rstrip(".").rstrip("%").strip()
    m = _FULL.fullmatch(t)
    if m is None:
        return None
    try:
        value = Decimal(m.group(2).replace(",", ""))
    except InvalidOperation:  # pragma: no cover - the regex admits only valid literals
        return None
    if m.group(1) == "-":
        value = -value
    if value == 0:
        return "0"
    with localcontext() as ctx:  # exact: normalize() would round to the context's 28 digits
        ctx.prec = len(m.group(2)) + 1
        return format(value.normalize(), "f")


def extract_answer(text: str, mode: str) -> str | None:
    """The normalised answer in `text` under `mode` ("strict" or "lenient"), or None."""
    if mode == "strict":
        m = _MARKED.search(text)
        return normalize_number(m.group(1)) if m else None
    if mode == "lenient":
        found = _NUMBER.findall(text)
        return normalize_number(found[-1]) if found else None
    raise ValueError(f"unknown answer mode {mode!r}; expected one of {', '.join(MODES)}")


def gold_number(answer: str) -> str:
    """The normalised number after '####' in a GSM8K gold solution; ValueError if none."""
    number = extract_answer(answer, "strict")
    if number is None:
        raise ValueError(f"no number after '####' in gold solution: {answer[-80:]!r}")
    return number


def is_correct(completion: str, gold: str, mode: str = "strict") -> bool:
    """r(q, o) == 1: the answer extracted from `completion` equals the gold number `gold`."""
    target = normalize_number(gold)
    if target is None:
        raise ValueError(f"gold answer {gold!r} is not a number")
    return extract_answer(completion, mode) == target


def make_reward_fn(mode: str = "strict") -> Callable[..., list[float]]:
    """A TRL reward function: f(prompts, completions, gold, **kwargs) -> [1.0 | 0.0, ...].

    `gold` is the dataset column of gold numbers (GRPOTrainer passes dataset columns as keyword
    arguments); extra keyword arguments are ignored.
    """
    if mode not in MODES:
        raise ValueError(f"unknown answer mode {mode!r}; expected one of {', '.join(MODES)}")

    def reward(prompts, completions, gold, **kwargs) -> list[float]:
        if len(completions) != len(gold):
            raise ValueError(f"{len(completions)} completions but {len(gold)} gold answers")
        return [float(is_correct(c, g, mode)) for c, g in zip(completions, gold)]

    reward.__name__ = f"gsm8k_{mode}"  # TRL logs rewards under the function's name
    return reward
