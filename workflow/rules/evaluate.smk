"""Stage evaluate (Sec. 6): every checkpoint, eval.samples samples per prompt on every split of
eval.splits (test: held-out problems, train: the fixed training pool), per-prompt success counts
with Wilson intervals under the strict and lenient answer extraction (grpo_repro.evaluate.run).

One job per (variant, step) writes all splits. Step 0 (pi_ref) is evaluated once, as variant `ref`
(results/evaluate/ref/{split}/step_0.*), and shared by every variant.
"""


rule evaluate_checkpoint:
    """eval.samples completions of every prompt of every split from one checkpoint."""
    input:
        unpack(evaluate_inputs),
        code=code("evaluate_checkpoint.py"),
    output:
        tables=expand(evaluate_table("{{variant}}", "{split}", "{{step}}", "csv"), split=SPLITS),
        meta=expand(evaluate_table("{{variant}}", "{split}", "{{step}}", "json"), split=SPLITS),
    log:
        f"{LOGS}/evaluate/{{variant}}/step_{{step}}.log",
    benchmark:
        f"{BENCH}/evaluate/{{variant}}_step_{{step}}.tsv"
    wildcard_constraints:
        variant="|".join(["ref"] + VARIANTS),
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30 if ORGANISM else 240,  # minutes (the SLURM profile may override)
    params:
        model=checkpoint_dir,
        splits=SPLITS,
        settings=cfg.eval_settings(config),
    script:
        "../scripts/evaluate_checkpoint.py"
