"""Stage 5c: success amplification: mean success per step (bootstrap over prompts), p_ref vs final p
per prompt, shares above/on/below the diagonal, paired difference final - p_ref (Thm 3)."""

import sys

from grpo_repro.final import amplification as amp
from grpo_repro.final import tables

sm = snakemake  # noqa: F821 (injected by Snakemake)
sys.stderr = sys.stdout = open(sm.log[0], "w")
long = tables.read_long(sm.input.long)
n_boot, seed = sm.params.n_bootstrap, sm.params.seed
prompts = amp.final_vs_ref(long)
tables.write_csv(amp.mean_by_step(long, n_boot, seed), sm.output.mean)
tables.write_csv(prompts, sm.output.prompts)
tables.write_csv(amp.shares(prompts), sm.output.shares)
tables.write_csv(amp.paired_diffs(prompts, n_boot, seed), sm.output.paired)
