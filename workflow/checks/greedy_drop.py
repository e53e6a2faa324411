"""Why does GRPO's GREEDY success fall on problems where pi_ref's greedy answer is right? (Issue:
amplification vs sharpening; the "other" problems lose ~9 points at greedy after GRPO.)

Greedy-decodes every prompt with pi_ref and with a GRPO checkpoint, and for each prompt that
pi_ref solves greedily and the policy does not, finds the first token where the two greedy
completions part, and reports:
  * the kind of error the policy's greedy chain makes there (a number off by 1 or 2 from pi_ref's:
    one of the noisy teacher's slips; another number; not a number: format);
  * the margin of that choice: the policy's log-probability of its own token minus that of pi_ref's
    token (a near-tie flips with a small margin) and the same difference under pi_ref;
  * the policy's success at T = 1 on those prompts (from 50 fresh samples), to tell a flipped
    near-tie (the right chain still likely) from a lost skill.

Usage: .venv/bin/python workflow/checks/greedy_drop.py --ref results/train/ref/model \
         --policy results/train/grpo/seed_0/checkpoints/step_160 --prompts results/data/test.jsonl
Prints its figures; writes nothing.
"""

from __future__ import annotations

import argparse
import collections

import numpy as np
import torch

from grpo_repro import reward
from grpo_repro.data.organism import in_misconception_class
from grpo_repro.data.sets import read_prompts
from grpo_repro.models import load_policy
from grpo_repro.sampler.hf import HFSampler
from grpo_repro.sampler.params import SamplingParams


def greedy(model, tok, prompts, max_new_tokens):
    s = HFSampler(model, tok, batch_prompts=64)
    out = s.sample(
        prompts, 1, SamplingParams(0.0, max_new_tokens=max_new_tokens), [0] * len(prompts)
    )
    return [t[0] for t in out.texts]


def first_split(tok, a: str, b: str):
    """(common prefix text, token of a, token of b) at the first differing token."""
    ta, tb = (
        tok(a, add_special_tokens=False)["input_ids"],
        tok(b, add_special_tokens=False)["input_ids"],
    )
    i = 0
    while i < min(len(ta), len(tb)) and ta[i] == tb[i]:
        i += 1
    prefix = tok.decode(ta[:i])
    return prefix, (ta[i] if i < len(ta) else None), (tb[i] if i < len(tb) else None)


@torch.no_grad()
def logprob_gap(model, tok, prompt: str, prefix: str, own: int, other: int) -> float:
    ids = tok(prompt + prefix, add_special_tokens=False, return_tensors="pt")["input_ids"]
    logp = torch.log_softmax(model(ids).logits[0, -1].float(), -1)
    return float(logp[own] - logp[other])


@torch.no_grad()
def result_logps(model, tok, rec) -> list[tuple[int, float, bool]]:
    """(result value, log-prob of the right result token, whether it is the argmax) of every
    equation of the gold solution, teacher-forced (prompt + the gold lines before it)."""
    ids = tok(rec["prompt"] + rec["answer"], add_special_tokens=False)["input_ids"]
    logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), -1)
    eq = tok.convert_tokens_to_ids("=")
    out = []
    for j in range(1, len(ids)):
        if ids[j - 1] == eq:
            value = tok.decode([ids[j]]).strip()
            if value.isdigit():
                row = logp[j - 1]
                out.append((int(value), float(row[ids[j]]), int(row.argmax()) == ids[j]))
    return out


def kind(tok, own: int | None, other: int | None) -> str:
    a, b = (tok.decode([t]).strip() if t is not None else "" for t in (own, other))
    if a.isdigit() and b.isdigit():
        return "slip (off by 1-2)" if abs(int(a) - int(b)) <= 2 else "other number"
    return "format / operator"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--ref", required=True)
    ap.add_argument("--policy", required=True)
    ap.add_argument("--prompts", required=True)
    ap.add_argument("--max-new-tokens", type=int, default=24)
    ap.add_argument("--samples", type=int, default=50)
    a = ap.parse_args()
    torch.set_num_threads(1)
    recs = read_prompts(a.prompts)
    prompts = [r["prompt"] for r in recs]
    ref, tok = load_policy(a.ref)
    pol, _ = load_policy(a.policy)
    g_ref = greedy(ref, tok, prompts, a.max_new_tokens)
    g_pol = greedy(pol, tok, prompts, a.max_new_tokens)
    ok_ref = np.array([reward.is_correct(t, r["gold"], "strict") for t, r in zip(g_ref, recs)])
    ok_pol = np.array([reward.is_correct(t, r["gold"], "strict") for t, r in zip(g_pol, recs)])
    mis = np.array([in_misconception_class(r) for r in recs])
    for name, m in (("misconception class", mis), ("other problems", ~mis)):
        print(
            f"{name} ({m.sum()} prompts): greedy pi_ref {ok_ref[m].mean():.3f}, policy "
            f"{ok_pol[m].mean():.3f}; pi_ref right & policy wrong {int((ok_ref & ~ok_pol & m).sum())}, "
            f"pi_ref wrong & policy right {int((~ok_ref & ok_pol & m).sum())}"
        )
    # interference: results a misread tripling writes (2v with 3v <= max value) against the others
    misread = {2 * v for v in range(1, 34)}
    rows = []
    for i in np.flatnonzero(~mis):
        for (v, lr, ar), (_, lp, ap) in zip(
            result_logps(ref, tok, recs[i]), result_logps(pol, tok, recs[i])
        ):
            rows.append((v in misread, lp - lr, ar and not ap))
    rows = np.array(rows, float)
    for flag, name in (
        (1.0, "a misread tripling's value (2v, 3v <= 99)"),
        (0.0, "any other value"),
    ):
        r = rows[rows[:, 0] == flag]
        print(
            f"other problems, right results that are {name}: {len(r)} equations, mean change of "
            f"their log-prob {r[:, 1].mean():+.3f} nats, argmax lost {int(r[:, 2].sum())} "
            f"({r[:, 2].mean():.3f})"
        )
    lost = np.flatnonzero(ok_ref & ~ok_pol & ~mis)
    if not len(lost):
        return
    kinds, gaps_pol, gaps_ref = collections.Counter(), [], []
    for i in lost:
        prefix, own, other = first_split(tok, g_pol[i], g_ref[i])
        kinds[kind(tok, own, other)] += 1
        if own is not None and other is not None:
            gaps_pol.append(logprob_gap(pol, tok, prompts[i], prefix, own, other))
            gaps_ref.append(logprob_gap(ref, tok, prompts[i], prefix, other, own))
    print(f"other problems lost at greedy ({len(lost)}): first differing token: {dict(kinds)}")
    gp, gr = np.array(gaps_pol), np.array(gaps_ref)
    print(
        f"  policy's margin for its token over pi_ref's: median {np.median(gp):.2f} nats "
        f"(share < 0.5 nats: {(gp < 0.5).mean():.2f}); pi_ref's margin the other way: median "
        f"{np.median(gr):.2f} nats (share < 0.5: {(gr < 0.5).mean():.2f})"
    )
    for name, model in (("policy", pol), ("pi_ref", ref)):
        out = HFSampler(model, tok, batch_prompts=64).sample(
            [prompts[i] for i in lost],
            a.samples,
            SamplingParams(1.0, max_new_tokens=a.max_new_tokens),
            list(range(len(lost))),
        )
        p1 = [
            np.mean([reward.is_correct(t, recs[i]["gold"], "strict") for t in out.texts[j]])
            for j, i in enumerate(lost)
        ]
        print(
            f"  {name}'s success at T=1 on them: mean {np.mean(p1):.3f}, median {np.median(p1):.3f}"
        )
    flips = collections.Counter()
    for i in lost:
        prefix, own, other = first_split(tok, g_pol[i], g_ref[i])
        line = prefix.split("\n")[-1].strip()
        flips[f"{line} {tok.decode([own]).strip()} (pi_ref: {tok.decode([other]).strip()})"] += 1
    print(f"  the equations whose result flipped: {dict(flips)}")
    for i in lost[:3]:
        print(f"  example {recs[i]['prompt_id']}: pi_ref {g_ref[i]!r} | policy {g_pol[i]!r}")


if __name__ == "__main__":
    main()
