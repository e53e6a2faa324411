"""Stage fixed_point: the paper's fixed-point prediction (Thm 2-3, Fig 2/5; Thm 5 for mirror) tested
in real GRPO training, at the population (p*) and at the finite group size G (p*_G of h_G; issue
21). GRPO trains on the first fixed_point.n_prompts prompts of the training pool for many epochs;
each checkpoint is evaluated with fixed_point.samples samples per prompt, pi_ref with ref_samples;
the last checkpoint's sequence-level KL(pi || pi_ref) is measured; grpo_repro.fixed_point compares
each prompt's plateau with p*, p*_G and the baselines "stays at p_ref" and "goes to 1". Three
studies (grpo_repro.fixed_point.runs), each a named target: fixed_point_main (fixed_point.runs at
every beta and seed), fixed_point_groups (the group-size sweep), fixed_point_factors (plain k3,
mirror, one training setting changed at a time, the convergence check's long runs); `fixed_point`
runs all three.
"""

FP = config["fixed_point"]
FP_DIR = f"{RESULTS}/fixed_point"
FP_G = config["train"]["num_generations"]  # G of the base runs
FP_STUDIES = list(fp_runs.STUDIES)
# {variant}_{kl}[_{setting}]/beta_{beta}/seed_{seed}: every run of every study, each once
FP_RUNS = [r.name for r in fp_runs.all_runs(FP, FP_G)]
FP_RUN_RE = rf"{fp_runs.variant_re()}_(k3_ratio|k3)(_\w+)?/beta_[0-9.e+-]+/seed_\d+"
FP_LONG_RE = rf"\w+_{fp_runs.LONG}/beta_[0-9.e+-]+/seed_\d+"  # the convergence check's runs
FP_STEPS = fp_runs.checkpoint_steps(FP)
FP_LONG_STEPS = fp_runs.checkpoint_steps(FP, long=True)


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
        run=f"{FP_DIR}/train/{{run}}/run.json",
        log_csv=f"{FP_DIR}/train/{{run}}/train_log.csv",
    log:
        f"{LOGS}/fixed_point/train/{{run}}.log",
    benchmark:
        f"{BENCH}/fixed_point/train/{{run}}.tsv"
    wildcard_constraints:
        run=FP_RUN_RE,
    params:
        settings=lambda w: fp_runs.train_settings(TRAIN_CONFIG, FP, fp_runs.parse(w.run)),
        ref=REF_MODEL,
        n_epoch_prompts=FP["n_prompts"],
        variant=lambda w: fp_runs.parse(w.run).variant,
        seed=lambda w: fp_runs.parse(w.run).seed,


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
        run=rf"(?!{FP_LONG_RE}/){FP_RUN_RE}",  # not a long run
    params:
        run=lambda w: w.run,
        models=lambda w: {
            s: f"{FP_DIR}/train/{w.run}/checkpoints/step_{s}" for s in fp_runs.steps(FP, w.run)
        },
        tasks=lambda w: [
            t.as_dict() for t in fp_runs.eval_tasks(FP_DIR, w.run, fp_runs.steps(FP, w.run))
        ],
        splits=["pool"],
        settings=lambda w: fp_runs.eval_settings(cfg.eval_settings(config), FP, w.run),


use rule fixed_point_evaluate as fixed_point_evaluate_long with:
    output:
        tables=[t.csv for t in fp_runs.eval_tasks(FP_DIR, "{run}", FP_LONG_STEPS)],
        meta=[t.json for t in fp_runs.eval_tasks(FP_DIR, "{run}", FP_LONG_STEPS)],
    wildcard_constraints:
        run=FP_LONG_RE,


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
        run=FP_RUN_RE,
    conda:
        ENV
    threads: 1
    resources:
        gpu=gpus("kl"),  # samples from and scores with both models (common.smk gpus)
    params:
        model=lambda w: f"{FP_DIR}/train/{w.run}/checkpoints/step_{fp_runs.steps(FP, w.run)[-1]}",
        ref=REF_MODEL,
        samples=FP["kl_samples"],
        seed=lambda w: fp_runs.parse(w.run).seed,
        temperature=config["train"]["temperature"],
        max_new_tokens=config["train"]["max_completion_length"],
    script:
        "../scripts/fixed_point_kl.py"


rule fixed_point_tabular:
    """The tabular control: the same sampled update on a free per-prompt policy from p_ref."""
    input:
        ref=f"{FP_DIR}/evaluate/ref/pool/step_0.csv",
        code=code("fixed_point_tabular.py"),
    output:
        csv=f"{FP_DIR}/factors/data/tabular.csv",
    log:
        f"{LOGS}/fixed_point/fixed_point_tabular.log",
    benchmark:
        f"{BENCH}/fixed_point/fixed_point_tabular.tsv"
    conda:
        ENV
    threads: 1
    params:
        variants=fp_runs.tabular_variants(FP),
        beta=FP["sweep_beta"],
        eps=config["train"]["smoothing_eps"],
        G=FP_G,
        mu=config["train"]["num_iterations"],
        clip_eps=config["train"]["clip_eps"],
        lr=FP["tabular"]["lr"],
        n_iter=FP["tabular"]["n_iter"],
        seed=FP["seeds"][0],
    script:
        "../scripts/fixed_point_tabular.py"


rule fixed_point_compare:
    """One study: per prompt p_ref, p*, p*_G, the measured plateau, convergence, KL; per (run, beta)
    over seeds: the gaps against the baselines, the noise floor, dr_grpo's law; summary.md."""
    input:
        unpack(lambda w: fp_runs.compare_inputs(FP, FP_DIR, w.study, FP_G)),
        code=code("fixed_point_compare.py"),
    output:
        prompts=f"{FP_DIR}/{{study}}/data/prompts.csv",
        summary=f"{FP_DIR}/{{study}}/data/summary.csv",
        md=f"{FP_DIR}/{{study}}/summary.md",
    log:
        f"{LOGS}/fixed_point/fixed_point_compare_{{study}}.log",
    benchmark:
        f"{BENCH}/fixed_point/fixed_point_compare_{{study}}.tsv"
    wildcard_constraints:
        study="|".join(FP_STUDIES),
    conda:
        ENV
    threads: 1
    params:
        runs=lambda w: [r.name for r in fp_runs.study_runs(FP, w.study, FP_G)],
        steps=lambda w: {
            r.name: fp_runs.steps(FP, r) for r in fp_runs.study_runs(FP, w.study, FP_G)
        },
        eps=config["train"]["smoothing_eps"],
        n_bootstrap=config["report"]["n_bootstrap"],
        seed=FP["seeds"][0],
        base_g=FP_G,
    script:
        "../scripts/fixed_point_compare.py"


rule fixed_point_plot:
    """Measured plateau vs p_ref, p* and p*_G, one column per beta (reads the CSVs only)."""
    input:
        prompts=f"{FP_DIR}/{{study}}/data/prompts.csv",
        summary=f"{FP_DIR}/{{study}}/data/summary.csv",
        code=code("fixed_point_plot.py"),
    output:
        report(
            f"{FP_DIR}/{{study}}/fixed_point.png",
            caption="../report/fixed_point.rst",
            category=CATEGORIES["fixed_point"],
            labels={"figure": "plateau vs p* and p*_G", "study": "{study}"},
        ),
        f"{FP_DIR}/{{study}}/fixed_point.pdf",
    log:
        f"{LOGS}/fixed_point/fixed_point_plot_{{study}}.log",
    benchmark:
        f"{BENCH}/fixed_point/fixed_point_plot_{{study}}.tsv"
    wildcard_constraints:
        study="|".join(FP_STUDIES),
    conda:
        ENV
    threads: 1
    params:
        eps=config["train"]["smoothing_eps"],
    script:
        "../scripts/fixed_point_plot.py"


rule fixed_point_summary:
    """results/fixed_point/summary.md: every study's page under one title."""
    input:
        pages=expand(f"{FP_DIR}/{{study}}/summary.md", study=FP_STUDIES),
        code=code("fixed_point_summary.py"),
    output:
        md=f"{FP_DIR}/summary.md",
    log:
        f"{LOGS}/fixed_point/fixed_point_summary.log",
    benchmark:
        f"{BENCH}/fixed_point/fixed_point_summary.tsv"
    conda:
        ENV
    threads: 1
    params:
        studies=FP_STUDIES,
    script:
        "../scripts/fixed_point_summary.py"


rule fixed_point_main:
    """Study main (`snakemake -c2 fixed_point_main`)."""
    input:
        expand(f"{FP_DIR}/main/{{f}}", f=["summary.md", "fixed_point.png"]),


rule fixed_point_groups:
    """Study groups (`snakemake -c2 fixed_point_groups`)."""
    input:
        expand(f"{FP_DIR}/groups/{{f}}", f=["summary.md", "fixed_point.png"]),


rule fixed_point_factors:
    """Study factors (`snakemake -c2 fixed_point_factors`)."""
    input:
        expand(f"{FP_DIR}/factors/{{f}}", f=["summary.md", "fixed_point.png"]),


rule fixed_point:
    """The fixed-point test, every study (`snakemake -c2 fixed_point`)."""
    input:
        rules.fixed_point_summary.output,
        rules.fixed_point_main.input,
        rules.fixed_point_groups.input,
        rules.fixed_point_factors.input,
