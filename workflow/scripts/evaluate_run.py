"""Rules evaluate_reference, evaluate_run, fixed_point_evaluate (stage evaluate, Sec. 6): every
table of one run (grpo_repro.evaluate.tasks) -> results/evaluate/{run}/{split}/step_{N}[_T{t}].csv
+ .json (grpo_repro.evaluate.run)."""

from grpo_repro import io
from grpo_repro.evaluate.run import run_eval_job
from grpo_repro.preflight import check_device

sm = snakemake
io.log_to(sm.log[0])
settings = sm.params.settings
# the device that train.bf16 and eval.backend need, here, before any model loads
check_device({"train": {"bf16": settings["bf16"]}, "eval": settings["eval"]})
run_eval_job(
    {int(k): v for k, v in sm.params.models.items()},
    sm.params.tasks,
    settings,
    sm.params.run,
    dict(zip(sm.params.splits, sm.input.data)),
    threads=sm.threads,
    # speed only (config.SPEED_ONLY): a resource, not a param, so a change reruns nothing
    batch_prompts=sm.resources.batch_prompts,
)
