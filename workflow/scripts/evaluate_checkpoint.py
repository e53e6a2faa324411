"""Rule evaluate_checkpoint (stage evaluate, Sec. 6): one model (variant, step) on every split ->
results/evaluate/{variant}/{split}/step_{step}.csv + .json (grpo_repro.evaluate.run)."""

from grpo_repro import io
from grpo_repro.evaluate.run import run_checkpoint_eval
from grpo_repro.preflight import check_device

sm = snakemake
io.log_to(sm.log[0])
settings = sm.params.settings
# the device that train.bf16 and eval.backend need, here, before any model loads
check_device({"train": {"bf16": settings["bf16"]}, "eval": settings["eval"]})
splits = list(sm.params.splits)
data = dict(zip(splits, sm.input.data))
outputs = {s: (csv, js) for s, csv, js in zip(splits, sm.output.tables, sm.output.meta)}
run_checkpoint_eval(
    sm.params.model,
    settings,
    sm.wildcards.run,
    int(sm.wildcards.step),
    data,
    outputs,
    threads=sm.threads,
    # speed only (config.SPEED_ONLY): a resource, not a param, so a change reruns nothing
    batch_prompts=sm.resources.batch_prompts,
)
