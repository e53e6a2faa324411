"""Rule fixed_point_resolution (stage fixed_point, Thm 2-3 at finite G): the compact study's
p*_G gap against the better baseline, resampled at its own and smaller sample and prompt counts
(grpo_repro.fixed_point.aggregate)."""

import pandas as pd

from grpo_repro import io
from grpo_repro.fixed_point import aggregate


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    p = sm.params
    prompts = pd.read_csv(sm.input.prompts, dtype={"prompt_id": str})
    table = aggregate.resolution_table(
        prompts, p.eps, p.samples, p.prompts, n_resamples=p.n_resamples, seed=p.seed
    )
    io.write_csv(sm.output.csv, table)
    print(table.to_string())


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
