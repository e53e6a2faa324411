"""Rule data_prepare (stage data, Sec. 6): train, test and training-pool prompt sets and their
tokenizer (grpo_repro.data.prepare)."""

from grpo_repro import io
from grpo_repro.data.prepare import prepare

sm = snakemake
io.log_to(sm.log[0])
prepare(sm.params.settings, dict(sm.output.items()))
