"""Rule zero_measure (stage zero, Sec. 3 boundary case p_ref = 0): pi_ref (a fresh sample), every
checkpoint of every GRPO run and of the control on the confirmed zeros (grpo_repro.zero.sample):
pi_ref and each run's final checkpoint with zero.samples samples per prompt, the checkpoints before
it with eval.samples (what evaluation draws at every checkpoint) -> measured.csv: one row per
(run, step, prompt)."""

import pandas as pd

from grpo_repro import gpus, io, zero
from grpo_repro.evaluate.job import check_checkpoints, device_sections
from grpo_repro.preflight import check_device


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    # speed only (config.SPEED_ONLY): a resource, not a param, so a change reruns nothing
    settings = {**sm.params.settings, "batch_prompts": sm.resources.batch_prompts}
    n, n_mid = int(sm.params.samples), int(settings["eval"]["samples"])
    records = zero.read_zeros(sm.input.zeros)
    frames = []
    with gpus.acquire(gpus.requested(sm.resources)):
        check_device(device_sections(settings))
        import torch

        torch.set_num_threads(sm.threads)
        for run, models in sm.params.models.items() if records else ():
            models = {int(s): m for s, m in models.items()}
            check_checkpoints(models, sorted(models))
            # the control's samples are seeded apart from its twin main run's
            split = zero.CONTROL_SPLIT if run == sm.params.control else zero.MEASURE
            for step, model in sorted(models.items()):
                k = n if step == max(models) else n_mid
                with zero.policy(settings, model) as sampler:
                    name = run.removeprefix(zero.CONTROL)
                    df = zero.sample(sampler, records, k, settings, name, step, split)
                frames.append(df.assign(run=run, step=step)[zero.MEASURED])
                print(f"[zero] {run} step {step}: {int(df['successes'].sum())} of {k * len(df)}")
    io.write_csv(
        sm.output.csv, pd.concat(frames) if frames else pd.DataFrame(columns=zero.MEASURED)
    )


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
