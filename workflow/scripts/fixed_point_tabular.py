"""Rule fixed_point_tabular (stage fixed_point, issue 21's mechanism study): the same sampled GRPO
update on a free per-prompt policy, from each prompt's measured p_ref, for every variant of
fixed_point.runs at sweep_beta (grpo_repro.fixed_point.tabular)."""

import pandas as pd

from grpo_repro import io
from grpo_repro.fixed_point import tabular

sm = snakemake
io.log_to(sm.log[0])
p = sm.params
ref = pd.read_csv(sm.input.ref, dtype={"prompt_id": str})
parts = [
    tabular.control(ref, variant, p.beta, p.eps, p.G, p.mu, p.clip_eps, p.lr, p.n_iter, p.seed)
    for variant in p.variants
]
out = pd.concat(parts, ignore_index=True)
io.write_csv(sm.output.csv, out)
print(out.groupby("variant")[["p_tabular", "p_pred_G", "logit_sd"]].mean().to_string())
