"""Stage 5a: every evaluation table -> one long CSV (variant, split, step, prompt_id, ...); pi_ref's
step-0 table is repeated under every variant (Sec. 6: success rate = successes / samples)."""

import sys

from grpo_repro.final import tables

sm = snakemake  # noqa: F821 (injected by Snakemake)
sys.stderr = sys.stdout = open(sm.log[0], "w")
long = tables.load_long(sm.params.entries, sm.params.variants, sm.params.steps)
tables.write_csv(long, sm.output.long)
print(f"{len(long)} rows from {len(sm.params.entries)} tables")
