"""The zero-success study: the paper's absorbing zero tested in training (Sec. 3 boundary cases:
p_ref(q) = 0 is a fixed point of every variant's recursion, Mirror-GRPO p_n(q) = 0 for all n;
Sec. 6: "GRPO cannot create successes"). docs/zero.md says what it measures.

1. Screen: prompts with 0 successes in pi_ref's eval.samples samples (held-out: the test split,
   pi_ref's evaluation table, and zero.extra_held_out generated problems; training: the whole
   training split; both sampled here).
2. Confirm: each candidate with zero.samples fresh samples (seeds apart: no selection bias); a
   confirmed zero has 0 of them, and p_ref(q) <= `upper_bound(0, n)` (Clopper-Pearson, 95%).
3. Measure: pi_ref again (a third sample) and every checkpoint of every run on the confirmed zeros
   (pi_ref and the final checkpoints with zero.samples each, the earlier ones with eval.samples):
   success per checkpoint with intervals, the prompts that leave zero (success above pi_ref's
   bound; the theory predicts none), pass@k (support expansion against sharpening).
4. Control: the first variant's first-seed run on the confirmed zeros alone
   (grpo_repro.train.zero_control): every step before the first sampled success leaves the weights
   pi_ref's bit for bit; what the main runs do beyond it is transfer through shared weights.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import numpy as np
import pandas as pd

from grpo_repro.stats import pass_at_k, wilson

ALPHA = 0.05  # every interval and bound: 95%
#: evaluation split labels of the study's samples: each seeds its own generators
#: (grpo_repro.evaluate.run.prompt_seeds), so screen, confirmation and measurements are independent
SCREEN, CONFIRM, MEASURE = "zero_screen", "zero_confirm", "zero"
CONTROL_SPLIT = "zero_control"  # the control's measurements (seeded apart from its twin run's)
CONTROL = "control:"  # the control run's prefix in the study's tables
#: the control runs in one process (its check compares the one policy's weights after each step);
#: with vLLM, the engine inside it. The identity it checks does not depend on how many processes
#: share a batch.
CONTROL_TRAIN = {"devices": 1, "vllm_mode": "colocate"}
MEASURED = ["run", "step", "prompt_id", "successes", "samples"]  # measured.csv's columns
TABLE = ["run", "split", "step", "prompts", "successes", "samples", "p_hat", "ci_low", "ci_high"]
TABLE += ["left_zero", "predicted_left_zero"]  # checkpoints.csv's columns
PASS_K = ["run", "split", "step", "k", "pass_at_k"]  # pass_at_k.csv's columns
HELD_OUT, TRAINING = "held_out", "train"  # the prompts' `split` column: held-out or training
EXTRA_SEED_OFFSET = 4242  # the extra held-out problems are drawn from seed + this


def extra_held_out(config: dict, n: int, existing: list[list[dict]]) -> list[dict]:
    """`n` organism problems (data.source organism) drawn apart from the data splits' (seed + an
    offset), none whose question is in `existing` (every split: train, val, test, sft), rendered
    as data_prepare renders them; prompt ids held_out_NNNNN."""
    from grpo_repro.data.organism import TaskSpec, generate
    from grpo_repro.data.sets import render

    if n <= 0:
        return []
    org = config["organism"]
    spec = TaskSpec(org["min_steps"], org["max_steps"], org["max_operand"], org["max_value"])
    seen = {r["question"] for recs in existing for r in recs}
    drawn = generate({"test": 2 * n}, spec, config["seed"] + EXTRA_SEED_OFFSET, org["dedup"])
    fresh = [r for r in drawn["test"] if r["question"] not in seen][:n]
    if len(fresh) < n:
        raise ValueError(
            f"zero.extra_held_out: only {len(fresh)} of {2 * n} drawn problems are new"
        )
    for i, r in enumerate(fresh):
        r["prompt_id"] = f"held_out_{i:05d}"
    return render(fresh, config["prompt"])


def read_zeros(path) -> list[dict]:
    """The prompts of zeros.jsonl or control.jsonl: none when the file is empty (no zero
    confirmed, no candidate screened), else grpo_repro.data.sets.read_prompts's records."""
    from pathlib import Path

    from grpo_repro.data.sets import read_prompts

    return read_prompts(path) if Path(path).stat().st_size else []


@contextmanager
def policy(settings: dict, model):
    """The sampler of `model` as evaluation opens it (grpo_repro.evaluate.job: eval.dtype's
    weights, eval.backend, on the job's device), closed on exit. `settings`: evaluation's, with
    the speed-only batch_prompts."""
    import torch

    from grpo_repro.evaluate.job import close_sampler, eval_dtype, open_sampler
    from grpo_repro.gpus import vllm_platform

    on = "cuda" if torch.cuda.is_available() else "cpu"
    train = {k: settings.get(k, False) for k in ("bf16", "use_vllm")}
    dtype = eval_dtype(settings["eval"]["dtype"], train)
    sampler, _, _ = open_sampler(
        settings["eval"], model, dtype, on, int(settings["batch_prompts"]), vllm_platform(settings)
    )
    try:
        yield sampler
    finally:
        close_sampler(sampler)


def sample(
    sampler, records: list[dict], samples: int, settings: dict, run: str, step: int, split: str
):
    """An evaluation table of `records` (`samples` each, at the evaluation temperature and eval's
    decoding; grpo_repro.evaluate.run.evaluate_records), seeded by (run, step, split); the
    sampler's batch holds as many samples as evaluation's (prompts_per_batch)."""
    from grpo_repro.evaluate.run import evaluate_records, prompts_per_batch
    from grpo_repro.sampler.params import SamplingParams

    e = settings["eval"]
    sampler.batch_prompts = prompts_per_batch(settings["batch_prompts"], e["samples"], samples)
    params = SamplingParams(
        temperature=float(settings["temperature"]),
        top_p=float(e["top_p"]),
        top_k=int(e["top_k"]),
        max_new_tokens=int(e["max_new_tokens"]),
    )
    df, _ = evaluate_records(
        sampler, records, samples=int(samples), params=params, seed=int(settings["seed"]),
        run=run, step=int(step), split=split, progress=False,
    )  # fmt: skip
    return df


def upper_bound(successes, n, alpha: float = ALPHA):
    """Clopper-Pearson upper bound of p from `successes` in `n` (two-sided 1 - alpha); at 0
    successes 1 - (alpha / 2)^(1/n): 0.92% at n = 400, 0.995% at n = 369."""
    from scipy.stats import beta

    k, n = np.asarray(successes, float), np.asarray(n, float)
    out = np.where(k >= n, 1.0, beta.ppf(1 - alpha / 2, k + 1, np.maximum(n - k, 1)))
    return float(out) if out.ndim == 0 else out


def candidates(table: pd.DataFrame, split: str) -> pd.DataFrame:
    """The screen's zeros: prompts of an evaluation table with 0 strict successes."""
    zero = table[table["successes"] == 0]
    return pd.DataFrame(
        {
            "prompt_id": zero["prompt_id"].to_numpy(),
            "split": split,
            "screen_successes": 0,
            "screen_samples": zero["samples"].to_numpy(int),
        }
    )


def confirm(cands: pd.DataFrame, fresh: pd.DataFrame) -> pd.DataFrame:
    """Candidates with their fresh samples (an evaluation table over them): confirmed zeros have 0
    successes; `p_ref_upper` bounds p_ref from the fresh samples."""
    f = fresh.set_index("prompt_id").loc[cands["prompt_id"]]
    out = cands.assign(
        confirm_successes=f["successes"].to_numpy(int), confirm_samples=f["samples"].to_numpy(int)
    )
    out["p_ref_upper"] = upper_bound(out["confirm_successes"], out["confirm_samples"])
    out["zero"] = out["confirm_successes"] == 0
    return out


def ks(n: int) -> list[int]:
    """k of the pass@k curve: powers of 2 up to n, and n."""
    return sorted({*(2**i for i in range(int(math.log2(n)) + 1)), n})


def checkpoints(measured: pd.DataFrame, zeros: pd.DataFrame) -> pd.DataFrame:
    """Per (run, split, step): the confirmed zeros' pooled success with its Wilson interval, and
    how many prompts left zero (success above the prompt's p_ref bound). `measured`: one row per
    (run, step, prompt_id) with successes and samples, in its order (pi_ref's fresh sample, run
    `ref`, first; the control last)."""
    m = measured.merge(zeros[["prompt_id", "split", "p_ref_upper"]], on="prompt_id")
    m["left_zero"] = m["successes"] / m["samples"] > m["p_ref_upper"]
    rows = []
    for (run, split, step), g in m.groupby(["run", "split", "step"], sort=False):
        k, n = int(g["successes"].sum()), int(g["samples"].sum())
        low, high = wilson(k, n)
        # predicted_left_zero 0: Sec. 3, p_ref(q) = 0 is a fixed point of every variant
        row = (run, split, int(step), len(g), k, n, k / n, low, high, int(g["left_zero"].sum()), 0)
        rows.append(dict(zip(TABLE, row)))
    return pd.DataFrame(rows, columns=TABLE)


def pass_curves(
    measured: pd.DataFrame, zeros: pd.DataFrame, finals: dict[str, int]
) -> pd.DataFrame:
    """pass@k averaged over each split's confirmed zeros, for pi_ref (run `ref`, step 0) and each
    run's final checkpoint (`finals`: run -> step), k up to the samples drawn there."""
    m = measured.merge(zeros[["prompt_id", "split"]], on="prompt_id")
    rows = []
    for run, step in {"ref": 0, **finals}.items():
        for split, g in m[(m["run"] == run) & (m["step"] == step)].groupby("split", sort=True):
            n = int(g["samples"].min())
            for k in ks(n):
                curve = pass_at_k(g["samples"], g["successes"], k)
                rows.append(dict(zip(PASS_K, (run, split, int(step), k, np.mean(curve)))))
    return pd.DataFrame(rows, columns=PASS_K)


def section(
    prompts: pd.DataFrame,
    table: pd.DataFrame,
    passk: pd.DataFrame,
    control: dict,
    samples: int,
    train_visits: float | None = None,
) -> dict:
    """The summary's zero-success section: the counts (screened, confirmed, bound), per run and
    split the final checkpoint's pooled success and the prompts that left zero, pi_ref's fresh
    success, the control's record."""
    final = table[table["step"] == table.groupby("run")["step"].transform("max")]
    zeros = prompts[prompts["zero"]]
    splits = {}
    for split in (HELD_OUT, TRAINING):
        z = zeros[zeros["split"] == split]
        f = final[final["split"] == split]
        splits[split] = {
            "screened": int((prompts["split"] == split).sum()),
            "confirmed": len(z),
            "p_ref_upper": float(z["p_ref_upper"].max()) if len(z) else None,
            "runs": {
                r["run"]: {
                    k: r[k]
                    for k in TABLE[2:10]  # step .. left_zero
                }
                for r in f.to_dict("records")
            },
            "pass_at_max_k": {
                r["run"]: {"k": int(r["k"]), "pass_at_k": float(r["pass_at_k"])}
                for r in passk[passk["split"] == split]
                .sort_values("k")
                .groupby("run")
                .tail(1)
                .to_dict("records")
            },
        }
    return {
        "splits": splits,
        "control": control,
        "samples": int(samples),
        "train_visits": train_visits,  # sampled batches holding a training prompt, per main run
        "predicted_left_zero": 0,
    }
