"""Stage fixed_point: the paper's fixed-point prediction (Thm 2-3, Fig 2/5; Thm 5 for mirror; Thm 9
for two_kl) tested in real GRPO training, at the population (p*) and at the finite group size G
(p*_G of h_G). GRPO trains on the first fixed_point.n_prompts prompts of the training pool for many epochs;
each checkpoint is evaluated with fixed_point.samples samples per prompt, pi_ref with ref_samples;
the last checkpoint's sequence-level KL(pi || pi_ref) is measured; grpo_repro.fixed_point compares
each prompt's plateau with p*, p*_G and the baselines "stays at p_ref" and "goes to 1". Three
studies (grpo_repro.fixed_point.runs: one table of runs, the {run} wildcard's names), each a named
target: fixed_point_main (fixed_point.runs at every beta and seed, fixed_point.runs_sweep at
sweep_beta), fixed_point_groups (the group-size sweep), fixed_point_factors (plain k3,
mirror, one training setting changed at a time, the convergence check's long runs); `fixed_point`
runs all three. A fourth, compact, is part of the default graph (fixed_point.compact: one run
kind at one beta, a few checkpoints); its own rules are in fixed_point_compact.smk.
"""


include: "helpers/fixed_point.smk"  # the stage's tables and helpers


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
        code=lambda w: code("train_grpo.py", variants=[FP_TABLE[w.run].variant]),
    output:
        run=FP_TREE.run_json("{run}"),
        log_csv=FP_TREE.train_log("{run}"),
    log:
        f"{LOGS}/fixed_point/train/{{run}}.log",
    benchmark:
        f"{BENCH}/fixed_point/train/{{run}}.tsv"
    wildcard_constraints:
        run=constraint(FP_TABLE),
    priority: 1  # the longest chain of the default graph (the compact run): started first
    params:
        run=lambda w: grpo_run(
            config,
            FP_TABLE[w.run].variant,
            FP_TABLE[w.run].seed,
            train_overrides=fp_runs.train_overrides(FP, FP_TABLE[w.run]),
        ).params(),
        ref=REF_MODEL,
        n_epoch_prompts=FP["n_prompts"],


use rule evaluate_reference as fixed_point_evaluate_ref with:
    input:
        data=[rules.fixed_point_pool.output.pool],
        model=ref_model_input(),
        code=code("evaluate_run.py", variants=()),  # reads no variant record
    output:
        tables=[t.csv for t in fp_runs.eval_tasks(FP_DIR, REF, FP_STEPS)],
        meta=[t.json for t in fp_runs.eval_tasks(FP_DIR, REF, FP_STEPS)],
    log:
        f"{LOGS}/fixed_point/evaluate/ref.log",
    benchmark:
        f"{BENCH}/fixed_point/evaluate/ref.tsv"
    params:
        run=REF,
        models={0: REF_MODEL},
        tasks=[t.as_dict() for t in fp_runs.eval_tasks(FP_DIR, REF, FP_STEPS)],
        splits=[fp_runs.POOL],
        settings=fp_runs.eval_settings(cfg.eval_settings(config), FP, REF),


use rule evaluate_run as fixed_point_evaluate with:
    input:
        data=[rules.fixed_point_pool.output.pool],
        model=FP_TREE.run_json("{run}"),
        code=code("evaluate_run.py", variants=()),  # reads no variant record
    output:
        tables=[t.csv for t in fp_runs.eval_tasks(FP_DIR, "{run}", FP_STEPS)],
        meta=[t.json for t in fp_runs.eval_tasks(FP_DIR, "{run}", FP_STEPS)],
    log:
        f"{LOGS}/fixed_point/evaluate/{{run}}.log",
    benchmark:
        f"{BENCH}/fixed_point/evaluate/{{run}}.tsv"
    wildcard_constraints:
        run=constraint(set(FP_TABLE) - set(FP_LONG) - set(FP_COMPACT)),  # a max_steps run
    params:
        run=lambda w: w.run,
        models=lambda w: FP_TREE.checkpoints(w.run, fp_runs.steps(FP, FP_TABLE[w.run])),
        tasks=lambda w: [
            t.as_dict()
            for t in fp_runs.eval_tasks(FP_DIR, w.run, fp_runs.steps(FP, FP_TABLE[w.run]))
        ],
        splits=[fp_runs.POOL],
        settings=lambda w: fp_runs.eval_settings(cfg.eval_settings(config), FP, FP_TABLE[w.run]),


use rule fixed_point_evaluate as fixed_point_evaluate_long with:
    output:
        tables=[t.csv for t in fp_runs.eval_tasks(FP_DIR, "{run}", FP_LONG_STEPS)],
        meta=[t.json for t in fp_runs.eval_tasks(FP_DIR, "{run}", FP_LONG_STEPS)],
    wildcard_constraints:
        run=constraint(FP_LONG),


rule fixed_point_kl:
    """Sequence-level KL(pi || pi_ref) per prompt of a run's last checkpoint, from its samples."""
    input:
        run=FP_TREE.run_json("{run}"),
        pool=rules.fixed_point_pool.output.pool,
        ref=ref_model_input(),
        code=code("fixed_point_kl.py"),
    output:
        csv=fp_runs.kl_table(FP_DIR, "{run}"),
    log:
        f"{LOGS}/fixed_point/kl/{{run}}.log",
    benchmark:
        f"{BENCH}/fixed_point/kl/{{run}}.tsv"
    wildcard_constraints:
        run=constraint(FP_TABLE),
    conda:
        ENV
    threads: 1
    resources:
        gpu=gpus("kl"),  # samples from and scores with both models (common.smk gpus)
    params:
        model=lambda w: FP_TREE.checkpoint(w.run, fp_runs.steps(FP, FP_TABLE[w.run])[-1]),
        ref=REF_MODEL,
        samples=FP["kl_samples"],
        seed=lambda w: FP_TABLE[w.run].seed,
        temperature=config["train"]["temperature"],
        max_new_tokens=config["train"]["max_completion_length"],
    script:
        "../scripts/fixed_point_kl.py"


rule fixed_point_tabular:
    """The tabular control: the same sampled update on a free per-prompt policy from p_ref."""
    input:
        ref=FP_TREE.table(REF, fp_runs.POOL, 0),
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
        unpack(lambda w: fp_runs.compare_inputs(FP, FP_DIR, fp_study(w.study))),
        tabular=lambda w: rules.fixed_point_tabular.output.csv if w.study == "factors" else [],
        code=code("fixed_point_compare.py"),
    output:
        prompts=f"{FP_DIR}/{{study}}/data/prompts.csv",
        trajectories=f"{FP_DIR}/{{study}}/data/trajectories.csv",
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
        runs=lambda w: [r.as_dict() for r in fp_study(w.study)],
        steps=lambda w: {r.name: fp_runs.steps(FP, r) for r in fp_study(w.study)},
        eps=config["train"]["smoothing_eps"],
        n_bootstrap=config["report"]["n_bootstrap"],
        seed=FP["seeds"][0],
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
        fixed_point_targets(),
        rules.fixed_point_main.input,
        rules.fixed_point_groups.input,
        rules.fixed_point_factors.input,
