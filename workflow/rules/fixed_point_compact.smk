"""Stage fixed_point, study compact (fixed_point.compact), part of the default graph: the rules of
its own, beside those it shares with the named studies (fixed_point.smk: training, pi_ref's
evaluation, KL, comparison, figure). The evaluation of its checkpoints (fixed_point.compact's
steps), and the resampling that says how finely it resolves the law of Thm 2-3 at finite G
(grpo_repro.fixed_point.aggregate).
"""

from grpo_repro.fixed_point import runs as fp_runs
from grpo_repro.runs import constraint


use rule fixed_point_evaluate as fixed_point_evaluate_compact with:
    output:
        tables=[t.csv for t in fp_runs.eval_tasks(P.fp_dir, "{run}", P.fp_compact_steps)],
        meta=[t.json for t in fp_runs.eval_tasks(P.fp_dir, "{run}", P.fp_compact_steps)],
    wildcard_constraints:
        run=constraint(P.fp_compact),


rule fixed_point_resolution:
    """Study compact: how finely it resolves p*_G's gap against the better baseline, by resampling
    its prompts and samples at its own and smaller counts (grpo_repro.fixed_point.aggregate)."""
    input:
        prompts=f"{P.fp_compact_dir}/data/prompts.csv",
        code=code("fixed_point_resolution.py"),
    output:
        csv=f"{P.fp_compact_dir}/data/resolution.csv",
    log:
        f"{P.logs}/fixed_point/fixed_point_resolution.log",
    benchmark:
        f"{P.bench}/fixed_point/fixed_point_resolution.tsv"
    conda:
        P.env
    params:
        eps=config["train"]["smoothing_eps"],
        samples=P.fp_compact_resample.get("samples", []),
        prompts=P.fp_compact_resample.get("prompts", []),
        n_resamples=config["report"]["n_bootstrap"],
        seed=P.fp["seeds"][0],
    script:
        "../scripts/fixed_point_resolution.py"
