"""Generator of GSM8K-format word problems in a small closed vocabulary (the organism's data, Sec. 6).

A problem is a start amount and 1..max_steps changes (gain, loss, doubling, tripling); the worked
solution writes one equation per line and ends with `#### N`, exactly like a GSM8K gold answer.
Difficulty knobs: the number of steps and the operand sizes. Answers are correct by construction
and every intermediate value stays in [0, max_value], so each number is one token.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

NAMES = ["Tom", "Ann", "Sam", "Mia", "Ben", "Eva", "Leo", "Zoe", "Max", "Ivy"]
ITEMS = ["apples", "books", "coins", "cards", "pens", "shells", "stamps", "cookies"]
PRONOUN = {"Tom": "He", "Sam": "He", "Ben": "He", "Leo": "He", "Max": "He"}


@dataclass(frozen=True)
class TaskSpec:
    """Difficulty knobs of the generator."""

    min_steps: int = 1  # fewest changes after the start amount
    max_steps: int = 3  # most changes (more steps = harder)
    max_operand: int = 25  # largest number added / removed, and largest start amount
    max_value: int = 999  # no intermediate value exceeds this (one token per number)

    def __post_init__(self):
        if not 1 <= self.min_steps <= self.max_steps:
            raise ValueError(
                f"need 1 <= min_steps <= max_steps, got {self.min_steps}, {self.max_steps}"
            )
        if self.max_operand < 2:
            raise ValueError(f"max_operand must be >= 2, got {self.max_operand}")


def _step(rng: random.Random, value: int, spec: TaskSpec, she_he: str, item: str):
    """One change: (sentence, equation, new value), or None if it would leave [0, max_value]."""
    kind = rng.choice(["gain", "gain", "loss", "loss", "double", "triple"])
    if kind == "gain":
        k = rng.randint(1, spec.max_operand)
        return f"{she_he} buys {k} more {item}.", f"{value} + {k} = {value + k}", value + k
    if kind == "loss":
        if value < 2:
            return None
        k = rng.randint(1, min(spec.max_operand, value - 1))
        return f"{she_he} gives away {k} {item}.", f"{value} - {k} = {value - k}", value - k
    factor = 2 if kind == "double" else 3
    word = "doubles" if factor == 2 else "triples"
    return f"{she_he} {word} the {item}.", f"{value} * {factor} = {value * factor}", value * factor


def make_problem(rng: random.Random, spec: TaskSpec) -> dict:
    """One problem: question, worked solution ending in `#### N`, gold number, step count."""
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    she_he = PRONOUN.get(name, "She")
    n_steps = rng.randint(spec.min_steps, spec.max_steps)
    value = rng.randint(2, spec.max_operand)
    sentences, equations = [f"{name} has {value} {item}."], []
    while len(equations) < n_steps:
        step = _step(rng, value, spec, she_he, item)
        if step is None or step[2] > spec.max_value:
            continue
        sentence, equation, value = step
        sentences.append(sentence)
        equations.append(equation)
    question = " ".join(sentences) + f" How many {item} does {name} have now?"
    answer = "\n".join(equations) + f"\n#### {value}"
    return {"question": question, "answer": answer, "gold": str(value), "steps": n_steps}


def generate(n_train: int, n_test: int, spec: TaskSpec, seed: int) -> tuple[list[dict], list[dict]]:
    """Disjoint train / held-out sets: no shared question text and no shared equation sequence."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[dict] = []
    attempts = 0
    while len(out) < n_train + n_test:
        attempts += 1
        if attempts > 50 * (n_train + n_test):
            raise ValueError(f"cannot draw {n_train + n_test} distinct problems with {spec}")
        prob = make_problem(rng, spec)
        key_q, key_a = "q:" + prob["question"], "a:" + prob["answer"]
        if key_q in seen or key_a in seen:
            continue
        seen.update((key_q, key_a))
        out.append(prob)
    test, train = out[:n_test], out[n_test:]
    for split, recs in (("train", train), ("test", test)):
        for i, rec in enumerate(recs):
            rec["prompt_id"] = f"{split}_{i:05d}"
    return train, test
