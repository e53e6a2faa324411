"""Generator of GSM8K-format word problems in a small closed vocabulary (the organism's data, Sec. 6).

A problem is a start amount and 1..max_steps changes (gain, loss, doubling, tripling); the worked
solution writes one equation per line and ends with `#### N`, exactly like a GSM8K gold answer.
Difficulty knobs: the number of steps and the operand sizes. Answers are correct by construction
and every intermediate value stays in [0, max_value], so each number is one token.

Splits come from ONE distribution: problems are drawn, de-duplicated (no two share a question
text; `dedup="question_and_solution"` also forbids a shared equation chain), shuffled with a
seeded generator and only then cut into test, val, train and sft, so every split has the same
difficulty mix up to sampling noise (`step_mix`).

The reference policy pi_ref learns from a *noisy teacher* (`noisy_solution`): in the SFT data each
equation's result slips by a small amount with probability `p`, and the chain continues from the
slipped value, while the gold answer the reward checks stays correct. pi_ref thus ranks the correct
chain high but samples slips: its failures are sampling behaviour that a binary reward can select
against, which is the situation where GRPO's amplification carries over to unseen problems.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

NAMES = ["Tom", "Ann", "Sam", "Mia", "Ben", "Eva", "Leo", "Zoe", "Max", "Ivy"]
ITEMS = ["apples", "books", "coins", "cards", "pens", "shells", "stamps", "cookies"]
PRONOUN = {"Tom": "He", "Sam": "He", "Ben": "He", "Leo": "He", "Max": "He"}
SPLITS = ("test", "val", "train", "sft")  # the order in which the shuffled problems are cut
OPS = {"+": lambda v, k: v + k, "-": lambda v, k: v - k, "*": lambda v, k: v * k}


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
    """One change: (sentence, op, k), or None if it would leave [0, max_value]."""
    kind = rng.choice(["gain", "gain", "loss", "loss", "double", "triple"])
    if kind == "gain":
        k = rng.randint(1, spec.max_operand)
        return f"{she_he} buys {k} more {item}.", "+", k
    if kind == "loss":
        if value < 2:
            return None
        k = rng.randint(1, min(spec.max_operand, value - 1))
        return f"{she_he} gives away {k} {item}.", "-", k
    factor = 2 if kind == "double" else 3
    word = "doubles" if factor == 2 else "triples"
    return f"{she_he} {word} the {item}.", "*", factor


def chain(start: int, ops) -> tuple[list[str], int]:
    """(equation lines, final value) of applying `ops` [(op, k), ...] to `start`."""
    lines, value = [], start
    for op, k in ops:
        new = OPS[op](value, k)
        lines.append(f"{value} {op} {k} = {new}")
        value = new
    return lines, value


def make_problem(rng: random.Random, spec: TaskSpec) -> dict:
    """One problem: question, worked solution ending in `#### N`, gold number, step count, and its
    start value and operations (for the noisy teacher)."""
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    she_he = PRONOUN.get(name, "She")
    n_steps = rng.randint(spec.min_steps, spec.max_steps)
    start = value = rng.randint(2, spec.max_operand)
    sentences, ops = [f"{name} has {value} {item}."], []
    while len(ops) < n_steps:
        step = _step(rng, value, spec, she_he, item)
        if step is None or OPS[step[1]](value, step[2]) > spec.max_value:
            continue
        sentences.append(step[0])
        ops.append([step[1], step[2]])
        value = OPS[step[1]](value, step[2])
    question = " ".join(sentences) + f" How many {item} does {name} have now?"
    lines, value = chain(start, ops)
    answer = "\n".join(lines) + f"\n#### {value}"
    return {
        "question": question,
        "answer": answer,
        "gold": str(value),
        "steps": n_steps,
        "start": start,
        "ops": ops,
    }


MISCONCEPTION = ("*", 3)  # the step class the teacher misreads: a tripling, written as a doubling
MISREAD = ("*", 2)


def in_misconception_class(rec: dict) -> bool:
    """Whether a problem has a step of the misconception class (a tripling)."""
    return any(tuple(op) == MISCONCEPTION for op in rec.get("ops", []))


def noisy_solution(
    rec: dict,
    rng: random.Random,
    p: float,
    slips,
    max_value: int,
    tries: int = 20,
    q: float = 0.0,
) -> str:
    """The worked solution as a noisy teacher writes it: each equation's result is off by a slip
    drawn from `slips` with probability `p`, and the chain continues from the slipped value (the
    final line states the slipped result). With probability `q` the teacher also misreads a step
    of the misconception class (a tripling, MISCONCEPTION) as a doubling: it writes `v * 2 = 2v`
    and goes on from 2v, a systematic error that pi_ref learns as its most likely step when q >
    1/2. Draws again (at most `tries` times) when a value leaves [0, max_value]; the clean
    solution when p = q = 0 or no draw fits. With q = 0 no draw is spent on the misconception,
    so the teacher's text is that of the slips alone."""
    if p <= 0 and q <= 0:
        return rec["answer"]
    for _ in range(tries):
        value, lines = rec["start"], []
        for op, k in rec["ops"]:
            if q > 0 and (op, k) == MISCONCEPTION and rng.random() < q:
                op, k = MISREAD
            new = OPS[op](value, k)
            if p > 0 and rng.random() < p:
                new += rng.choice(list(slips))
            if not 0 <= new <= max_value:
                break
            lines.append(f"{value} {op} {k} = {new}")
            value = new
        else:
            return "\n".join(lines) + f"\n#### {value}"
    return rec["answer"]


#: the share of the problem space the generator may be asked to fill (it draws by rejection: near
#: the whole space the rare problems would take more draws than it allows)
SPACE_SHARE = 0.95


def problem_space(spec: TaskSpec, dedup: str = "question") -> int:
    """How many distinct problems `generate` can draw: distinct chains (a start amount and its
    changes, each keeping the value in [0, max_value]) times the names and items a question
    varies (dedup question); distinct chains alone with dedup question_and_solution, whose
    solution is the chain. Counted exactly (a recursion over the value after each change)."""
    from functools import cache

    @cache
    def chains(value: int, steps: int) -> int:
        if steps == 0:
            return 1
        top = spec.max_value
        nxt = [value + k for k in range(1, spec.max_operand + 1) if value + k <= top]
        if value >= 2:
            nxt += [value - k for k in range(1, min(spec.max_operand, value - 1) + 1)]
        nxt += [value * f for f in (2, 3) if value * f <= top]
        return sum(chains(v, steps - 1) for v in nxt)

    starts = range(2, spec.max_operand + 1)
    steps = range(spec.min_steps, spec.max_steps + 1)
    total = sum(chains(v, n) for v in starts for n in steps)
    return total * (len(NAMES) * len(ITEMS) if dedup == "question" else 1)


def generate(sizes: dict, spec: TaskSpec, seed: int, dedup: str = "question") -> dict:
    """{split: records} for the splits of SPLITS with a size in `sizes` (missing or 0: empty):
    drawn, de-duplicated, shuffled (seeded), then cut in the order of SPLITS."""
    if dedup not in ("question", "question_and_solution"):
        raise ValueError(f"dedup must be question or question_and_solution, got {dedup!r}")
    total = sum(int(sizes.get(s) or 0) for s in SPLITS)
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[dict] = []
    attempts = 0
    while len(out) < total:
        attempts += 1
        if attempts > 50 * total:
            raise ValueError(f"cannot draw {total} distinct problems with {spec}")
        prob = make_problem(rng, spec)
        keys = ["q:" + prob["question"]]
        if dedup == "question_and_solution":
            keys.append("a:" + prob["answer"])
        if any(k in seen for k in keys):
            continue
        seen.update(keys)
        out.append(prob)
    random.Random(seed + 12345).shuffle(out)
    splits, start = {}, 0
    for split in SPLITS:
        n = int(sizes.get(split) or 0)
        splits[split] = out[start : start + n]
        start += n
        for i, rec in enumerate(splits[split]):
            rec["prompt_id"] = f"{split}_{i:05d}"
    return splits


def step_mix(records: list[dict], max_steps: int) -> list[float]:
    """Share of problems with 1, 2, ..., max_steps steps."""
    n = max(1, len(records))
    return [sum(r["steps"] == k for r in records) / n for k in range(1, max_steps + 1)]
