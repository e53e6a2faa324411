"""Rule train_reference (stage train, Sec. 6 analogue): the organism's pi_ref, SFT on worked
solutions (grpo_repro.train.sft.run)."""

from grpo_repro import io
from grpo_repro.train import sft

sm = snakemake
io.log_to(sm.log[0])
s = sm.params.settings
sft.run(
    sm.input.train,
    sm.input.tokenizer,
    sm.output.model,
    sm.output.log_csv,
    sm.output.run,
    seed=s["seed"],
    organism=s["organism"],
    threads=sm.threads,
)
