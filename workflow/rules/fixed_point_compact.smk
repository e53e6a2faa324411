"""Stage fixed_point, study compact (fixed_point.compact), part of the default graph: the rules of
its own, beside those it shares with the named studies (fixed_point.smk: training, pi_ref's
evaluation, KL, comparison, figure). The evaluation of its checkpoints (fixed_point.compact's
steps), and the resampling that says how finely it resolves the law of Thm 2-3 at finite G
(grpo_repro.fixed_point.resolution).
"""


use rule fixed_point_evaluate as fixed_point_evaluate_compact with:
    output:
        tables=[t.csv for t in fp_runs.eval_tasks(FP_DIR, "{run}", FP_COMPACT_STEPS)],
        meta=[t.json for t in fp_runs.eval_tasks(FP_DIR, "{run}", FP_COMPACT_STEPS)],
    wildcard_constraints:
        run=constraint(FP_COMPACT),


rule fixed_point_resolution:
    """Study compact: how finely it resolves p*_G's gap against the better baseline, by resampling
    its prompts and samples at its own and smaller counts (grpo_repro.fixed_point.resolution)."""
    input:
        prompts=f"{FP_COMPACT_DIR}/data/prompts.csv",
        code=code("fixed_point_resolution.py"),
    output:
        csv=f"{FP_COMPACT_DIR}/data/resolution.csv",
    log:
        f"{LOGS}/fixed_point/fixed_point_resolution.log",
    benchmark:
        f"{BENCH}/fixed_point/fixed_point_resolution.tsv"
    conda:
        ENV
    threads: 1
    params:
        eps=config["train"]["smoothing_eps"],
        samples=FP_COMPACT_RESAMPLE.get("samples", []),
        prompts=FP_COMPACT_RESAMPLE.get("prompts", []),
        n_resamples=config["report"]["n_bootstrap"],
        seed=FP["seeds"][0],
    script:
        "../scripts/fixed_point_resolution.py"
