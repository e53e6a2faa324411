"""Stage evaluate (Sec. 6): every checkpoint, eval.samples samples per prompt on every split of
eval.splits (test: held-out problems, train: the fixed training pool), per-prompt success counts
with Wilson intervals under the strict and lenient answer extraction (grpo_repro.evaluate.run).

One job per (run, step) writes all splits; a run is `{variant}/seed_{seed}` (one GRPO seed of one
variant). Step 0 (pi_ref) is evaluated once, as run `ref` (results/evaluate/ref/{split}/step_0.*),
and shared by every run.
"""


rule evaluate_checkpoint:
    """eval.samples completions of every prompt of every split from one checkpoint (the device
    that eval.backend and train.bf16 need is checked first, grpo_repro.preflight)."""
    input:
        unpack(evaluate_inputs),
        code=code("evaluate_checkpoint.py"),
    output:
        tables=expand(evaluate_table("{{run}}", "{split}", "{{step}}", "csv"), split=SPLITS),
        meta=expand(evaluate_table("{{run}}", "{split}", "{{step}}", "json"), split=SPLITS),
    log:
        f"{LOGS}/evaluate/{{run}}/step_{{step}}.log",
    benchmark:
        f"{BENCH}/evaluate/{{run}}/step_{{step}}.tsv"
    wildcard_constraints:
        run=RUN_PATTERN,
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30 if ORGANISM else 240,  # minutes (the SLURM profile may override)
        # speed only: a resource is no rerun trigger (Snakemake 9 reruns on mtime, params,
        # input, software-env, code), so changing eval.batch_prompts reruns nothing
        batch_prompts=cfg.speed_setting(config, "eval", "batch_prompts"),
    params:
        model=checkpoint_dir,
        splits=SPLITS,
        settings=cfg.eval_settings(config),
    script:
        "../scripts/evaluate_checkpoint.py"
