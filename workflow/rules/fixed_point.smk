"""Stage fixed_point: the paper's fixed-point prediction (Thm 2-3, Fig 2/5; Thm 5 for mirror) tested
in real GRPO training, a named target (`snakemake -c2 fixed_point`). GRPO trains on the first
fixed_point.n_prompts prompts of the training pool for many epochs at every beta of
fixed_point.betas, for every run kind of fixed_point.runs (variant and KL estimator); each
checkpoint is evaluated with fixed_point.samples samples per prompt, pi_ref with ref_samples; the
last checkpoint's sequence-level KL(pi || pi_ref) is measured; grpo_repro.fixed_point compares each
prompt's plateau with p* and with the baselines "stays at p_ref" and "goes to 1".
"""

FP = config["fixed_point"]
FP_DIR = f"{RESULTS}/fixed_point"
# {variant}_{kl}/beta_{beta}/seed_{seed}: one GRPO run on the pool per run kind and beta
FP_RUNS = fp_runs.run_names(FP["runs"], FP["betas"], FP["seed"])
FP_STEPS = list(range(FP["save_steps"], FP["max_steps"] + 1, FP["save_steps"]))


rule fixed_point_pool:
    """The first fixed_point.n_prompts prompts of the training pool."""
    input:
        pool=rules.data_prepare.output.pool,
        code=code("fixed_point_pool.py"),
    output:
        pool=f"{FP_DIR}/pool.jsonl",
    log:
        f"{LOGS}/fixed_point/fixed_point_pool.log",
    benchmark:
        f"{BENCH}/fixed_point/fixed_point_pool.tsv"
    conda:
        ENV
    threads: 1
    params:
        n=FP["n_prompts"],
    script:
        "../scripts/fixed_point_pool.py"


use rule train_grpo as fixed_point_train with:
    input:
        ref=ref_model_input(),
        prompts=rules.fixed_point_pool.output.pool,
        code=code("train_grpo.py"),
    output:
        run=f"{FP_DIR}/train/{{variant}}_{{kl}}/beta_{{beta}}/seed_{{seed}}/run.json",
        log_csv=f"{FP_DIR}/train/{{variant}}_{{kl}}/beta_{{beta}}/seed_{{seed}}/train_log.csv",
    log:
        f"{LOGS}/fixed_point/train_{{variant}}_{{kl}}_beta_{{beta}}_seed_{{seed}}.log",
    benchmark:
        f"{BENCH}/fixed_point/train_{{variant}}_{{kl}}_beta_{{beta}}_seed_{{seed}}.tsv"
    wildcard_constraints:
        variant="grpo|mirror|dr_grpo|mirror_dr",
        kl="k3|k3_ratio",
        beta=r"[0-9.e+-]+",
    params:
        settings=lambda w: fp_runs.train_settings(TRAIN_CONFIG, FP, float(w.beta), w.kl),
        ref=REF_MODEL,
        n_epoch_prompts=FP["n_prompts"],


use rule evaluate_reference as fixed_point_evaluate_ref with:
    input:
        data=[rules.fixed_point_pool.output.pool],
        model=ref_model_input(),
        code=code("evaluate_run.py"),
    output:
        tables=[t.csv for t in fp_runs.eval_tasks(FP_DIR, "ref", FP_STEPS)],
        meta=[t.json for t in fp_runs.eval_tasks(FP_DIR, "ref", FP_STEPS)],
    log:
        f"{LOGS}/fixed_point/evaluate/ref.log",
    benchmark:
        f"{BENCH}/fixed_point/evaluate/ref.tsv"
    params:
        run="ref",
        models={0: REF_MODEL},
        tasks=[t.as_dict() for t in fp_runs.eval_tasks(FP_DIR, "ref", FP_STEPS)],
        splits=["pool"],
        settings=fp_runs.eval_settings(cfg.eval_settings(config), FP, "ref"),


use rule evaluate_run as fixed_point_evaluate with:
    input:
        data=[rules.fixed_point_pool.output.pool],
        model=f"{FP_DIR}/train/{{run}}/run.json",
        code=code("evaluate_run.py"),
    output:
        tables=[t.csv for t in fp_runs.eval_tasks(FP_DIR, "{run}", FP_STEPS)],
        meta=[t.json for t in fp_runs.eval_tasks(FP_DIR, "{run}", FP_STEPS)],
    log:
        f"{LOGS}/fixed_point/evaluate/{{run}}.log",
    benchmark:
        f"{BENCH}/fixed_point/evaluate/{{run}}.tsv"
    wildcard_constraints:
        run=r"(grpo|mirror|dr_grpo|mirror_dr)_(k3|k3_ratio)/beta_[0-9.e+-]+/seed_\d+",
    params:
        run=lambda w: w.run,
        models=lambda w: {s: f"{FP_DIR}/train/{w.run}/checkpoints/step_{s}" for s in FP_STEPS},
        tasks=lambda w: [t.as_dict() for t in fp_runs.eval_tasks(FP_DIR, w.run, FP_STEPS)],
        splits=["pool"],
        settings=lambda w: fp_runs.eval_settings(cfg.eval_settings(config), FP, w.run),


rule fixed_point_kl:
    """Sequence-level KL(pi || pi_ref) per prompt of a run's last checkpoint, from its samples."""
    input:
        run=f"{FP_DIR}/train/{{run}}/run.json",
        pool=rules.fixed_point_pool.output.pool,
        ref=ref_model_input(),
        code=code("fixed_point_kl.py"),
    output:
        csv=f"{FP_DIR}/kl/{{run}}.csv",
    log:
        f"{LOGS}/fixed_point/kl/{{run}}.log",
    benchmark:
        f"{BENCH}/fixed_point/kl/{{run}}.tsv"
    wildcard_constraints:
        run=r"(grpo|mirror|dr_grpo|mirror_dr)_(k3|k3_ratio)/beta_[0-9.e+-]+/seed_\d+",
    conda:
        ENV
    threads: 1
    params:
        model=lambda wildcards: f"{FP_DIR}/train/{wildcards.run}/checkpoints/step_{FP_STEPS[-1]}",
        ref=REF_MODEL,
        samples=FP["kl_samples"],
        seed=FP["seed"],
        temperature=config["train"]["temperature"],
        max_new_tokens=config["train"]["max_completion_length"],
    script:
        "../scripts/fixed_point_kl.py"


rule fixed_point_compare:
    """Per prompt: p_ref, predicted p*, measured plateau, KL; per (run, beta): the metrics against
    the two baselines; summary.md."""
    input:
        **fp_runs.table_paths(FP_DIR, FP_RUNS, FP_STEPS),
        **{f"kl@{run}": f"{FP_DIR}/kl/{run}.csv" for run in FP_RUNS},
        code=code("fixed_point_compare.py"),
    output:
        prompts=f"{FP_DIR}/data/prompts.csv",
        summary=f"{FP_DIR}/data/summary.csv",
        md=f"{FP_DIR}/summary.md",
    log:
        f"{LOGS}/fixed_point/fixed_point_compare.log",
    benchmark:
        f"{BENCH}/fixed_point/fixed_point_compare.tsv"
    conda:
        ENV
    threads: 1
    params:
        runs=FP_RUNS,
        steps=FP_STEPS,
        eps=config["train"]["smoothing_eps"],
        n_bootstrap=config["report"]["n_bootstrap"],
        seed=FP["seed"],
    script:
        "../scripts/fixed_point_compare.py"


rule fixed_point_plot:
    """Measured plateau vs p_ref and vs predicted p*, one column per beta (reads the CSVs only)."""
    input:
        prompts=rules.fixed_point_compare.output.prompts,
        summary=rules.fixed_point_compare.output.summary,
        code=code("fixed_point_plot.py"),
    output:
        report(
            f"{FP_DIR}/fixed_point.png",
            caption="../report/fixed_point.rst",
            category=CATEGORIES["fixed_point"],
            labels={"figure": "plateau vs p*"},
        ),
        f"{FP_DIR}/fixed_point.pdf",
    log:
        f"{LOGS}/fixed_point/fixed_point_plot.log",
    benchmark:
        f"{BENCH}/fixed_point/fixed_point_plot.tsv"
    conda:
        ENV
    threads: 1
    params:
        eps=config["train"]["smoothing_eps"],
    script:
        "../scripts/fixed_point_plot.py"


rule fixed_point:
    """The fixed-point test (`snakemake -c2 fixed_point`)."""
    input:
        rules.fixed_point_compare.output,
        rules.fixed_point_plot.output,
