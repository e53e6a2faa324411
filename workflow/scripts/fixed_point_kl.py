"""Rule fixed_point_kl (stage fixed_point): sequence-level KL(pi || pi_ref) per prompt of a run's
last checkpoint, estimated from its own samples (grpo_repro.fixed_point.kl), on the job's own GPU
(grpo_repro.gpus.acquire: the rule's `gpu` resource, none on a CPU)."""

import torch

from grpo_repro import gpus, io
from grpo_repro.data.sets import read_prompts
from grpo_repro.fixed_point.kl import kl_table


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    torch.set_num_threads(sm.threads)
    p = sm.params
    with gpus.acquire(gpus.requested(sm.resources)) as ids:  # sets CUDA_VISIBLE_DEVICES
        table = kl_table(
            p.model,
            p.ref,
            read_prompts(sm.input.pool),
            p.samples,
            p.seed,
            sm.wildcards.run,
            p.max_new_tokens,
            p.temperature,
            device="cuda" if ids else "cpu",  # the GPU the job holds
        )
    io.write_csv(sm.output.csv, table)
    print(table.describe().to_string())


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
