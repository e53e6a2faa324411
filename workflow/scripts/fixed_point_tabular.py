"""Rule fixed_point_tabular (stage fixed_point, study factors' tabular control): the same sampled
GRPO update on a free per-prompt policy, from each prompt's measured p_ref, for every variant of
fixed_point.runs at sweep_beta (grpo_repro.fixed_point.compare)."""

import pandas as pd

from grpo_repro import io
from grpo_repro.fixed_point import compare


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    p = sm.params
    ref = pd.read_csv(sm.input.ref, dtype={"prompt_id": str})
    parts = [
        compare.control(ref, variant, p.beta, p.eps, p.G, p.mu, p.clip_eps, p.lr, p.n_iter, p.seed)
        for variant in p.variants
    ]
    out = pd.concat(parts, ignore_index=True)
    io.write_csv(sm.output.csv, out)
    print(out.groupby("variant")[["p_tabular", "p_pred_G", "logit_sd"]].mean().to_string())


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
