"""Rule zero_reference (stage zero, Sec. 3 boundary case p_ref = 0): screen and confirm pi_ref's
zeros (grpo_repro.zero). Held-out candidates: pi_ref's test table, and zero.extra_held_out
generated problems (organism) screened with eval.samples fresh samples; training candidates: the
training split screened the same way. Each candidate is confirmed with zero.samples fresh samples.
Writes prompts.csv (every candidate and its confirmation), zeros.jsonl (the confirmed zeros) and
control.jsonl (what the control trains on: the zeros, or the candidates when none is confirmed)."""

import pandas as pd

from grpo_repro import gpus, io, zero
from grpo_repro.data.sets import read_prompts
from grpo_repro.evaluate.job import device_sections
from grpo_repro.preflight import check_device
from grpo_repro.runs import REF


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    # speed only (config.SPEED_ONLY): a resource, not a param, so a change reruns nothing
    settings = {**sm.params.settings, "batch_prompts": sm.resources.batch_prompts}
    n = int(sm.params.samples)
    splits = {k: read_prompts(sm.input[k]) for k in sm.params.splits}
    extra = zero.extra_held_out(sm.params.data, sm.params.extra_held_out, list(splits.values()))
    train = splits["train"][: sm.params.screen_train]  # the first n (null: all)
    split_of = {r["prompt_id"]: zero.TRAINING for r in train}
    split_of |= {r["prompt_id"]: zero.HELD_OUT for r in extra}
    by_id = {r["prompt_id"]: r for r in [*splits["test"], *train, *extra]}
    with gpus.acquire(gpus.requested(sm.resources)):
        check_device(device_sections(settings))
        import torch

        torch.set_num_threads(sm.threads)
        with zero.policy(settings, sm.params.model) as sampler:
            k = settings["eval"]["samples"]
            screen = zero.sample(sampler, train + extra, k, settings, REF, 0, zero.SCREEN)
            cands = pd.concat(
                [
                    zero.candidates(pd.read_csv(sm.input.ref_test), zero.HELD_OUT),
                    *(
                        zero.candidates(g, split)
                        for split, g in screen.groupby(screen["prompt_id"].map(split_of))
                    ),
                ],
                ignore_index=True,
            )
            cands = cands.groupby("split", sort=False).head(sm.params.max_candidates or len(cands))
            todo = [by_id[p] for p in cands["prompt_id"]]
            fresh = zero.sample(sampler, todo, n, settings, REF, 0, zero.CONFIRM)
    prompts = zero.confirm(cands, fresh)
    io.write_csv(sm.output.prompts, prompts)
    confirmed = prompts.loc[prompts["zero"], ["prompt_id", "split"]].to_numpy()
    zeros = [{**by_id[p], "split": s} for p, s in confirmed]
    io.write_jsonl(sm.output.zeros, zeros)
    # none confirmed: the control trains on the candidates (its check holds until a success)
    io.write_jsonl(sm.output.control, zeros or [by_id[p] for p in prompts["prompt_id"]])
    for split, g in prompts.groupby("split"):
        print(
            f"[zero] {split}: {len(g)} screened zeros, {int(g['zero'].sum())} confirmed (0 of {n})"
        )


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
