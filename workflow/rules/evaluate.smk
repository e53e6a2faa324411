"""Stage evaluate (Sec. 6): every checkpoint, eval.samples samples per prompt on every split of
eval.splits (test: held-out problems, train: the fixed training pool, val), per-prompt success
counts with Wilson intervals under the strict and lenient answer extraction; pi_ref and each run's
final checkpoint also at every temperature of eval.temperatures (the sharpening baseline; 0 =
greedy) on eval.temperature_splits (grpo_repro.evaluate.run, grpo_repro.evaluate.tasks).

One job per run writes all its tables (one start-up, each model loaded once); a run is
`{variant}/seed_{seed}` (one GRPO seed of one variant, grpo_repro.runs). Step 0 (pi_ref) is
evaluated once, as run `ref` (results/evaluate/ref/{split}/step_0*), and shared by every run.
"""

from grpo_repro import config as cfg
from grpo_repro.gpus import job_gpus
from grpo_repro.runs import REF, constraint


rule evaluate_reference:
    """pi_ref (step 0) on every split, and at every temperature of eval.temperatures (the device
    that eval.backend and train.bf16 need is checked first, grpo_repro.preflight)."""
    input:
        data=P.eval_data(),
        model=P.ref_input,
        code=code("evaluate_run.py", variants=()),  # reads no variant record
    output:
        tables=[t.csv for t in P.eval_tasks(REF)],
        meta=[t.json for t in P.eval_tasks(REF)],
    log:
        f"{P.logs}/evaluate/ref.log",
    benchmark:
        f"{P.bench}/evaluate/ref.tsv"
    conda:
        P.env
    resources:
        gpu=job_gpus(config, "eval"),  # GPUs of the job (grpo_repro.gpus.job_gpus)
        mem_mb=3000,
        runtime=30 if P.organism else 240,  # minutes (the SLURM profile may override)
        # speed only: a resource is no rerun trigger (Snakemake 9 reruns on mtime, params,
        # input, software-env, code), so changing eval.batch_prompts reruns nothing
        batch_prompts=cfg.speed_setting(config, "eval", "batch_prompts"),
    params:
        run=REF,
        models={0: P.ref_model},
        tasks=[t.as_dict() for t in P.eval_tasks(REF)],
        splits=P.eval_splits,
        settings=cfg.eval_settings(config),
    script:
        "../scripts/evaluate_run.py"


use rule evaluate_reference as evaluate_run with:
    """Every checkpoint of one GRPO run on every split, and its final checkpoint at every
    temperature of eval.temperatures."""
    input:
        data=P.eval_data(),
        model=P.tree.run_json("{run}"),
        code=code("evaluate_run.py", variants=()),  # reads no variant record
    output:
        tables=[t.csv for t in P.eval_tasks("{run}")],
        meta=[t.json for t in P.eval_tasks("{run}")],
    log:
        f"{P.logs}/evaluate/{{run}}.log",
    benchmark:
        f"{P.bench}/evaluate/{{run}}.tsv"
    wildcard_constraints:
        run=constraint(P.runs),
    resources:
        gpu=job_gpus(config, "eval"),
        mem_mb=3000,
        runtime=60 if P.organism else 720,  # minutes (the SLURM profile may override)
        batch_prompts=cfg.speed_setting(config, "eval", "batch_prompts"),  # speed only
    params:
        run=lambda w: w.run,
        models=lambda w: P.tree.checkpoints(w.run, P.steps),
        tasks=lambda w: [t.as_dict() for t in P.eval_tasks(w.run)],
