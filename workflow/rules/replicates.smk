"""Named target `replicates` (Thm 1 vs sharpening, held out): the comparison of each variant at its
best sampling temperature with pi_ref at ITS best, repeated on other replicates of pi_ref. A
replicate is a data and SFT seed of replicates.seeds: new problems, new SFT data, a new pi_ref; on
it, replicates.variants are trained with every GRPO seed of train.seeds and evaluated (final
checkpoint and pi_ref, every temperature of eval.temperatures) exactly as the default graph does,
by the same rules (`use rule`) under results/replicates/seed_{rep}/. results/replicates/summary.md
puts every replicate (the default graph's pi_ref, `seed`, included) side by side
(grpo_repro.report.replicates.replicate_table). The built organism only.
"""


include: "helpers/replicates.smk"  # the stage's tables and helpers


wildcard_constraints:
    rep=r"\d+",


use rule data_prepare as replicate_data with:
    output:
        **data_outputs(REP_ROOT),
    log:
        f"{LOGS}/replicates/seed_{{rep}}/data_prepare.log",
    benchmark:
        f"{BENCH}/replicates/seed_{{rep}}/data_prepare.tsv"
    params:
        settings=lambda w: {**settings("data", "prompt", "organism", "model"), "seed": int(w.rep)},


use rule train_reference as replicate_reference with:
    input:
        train=REP_TREE.data("sft"),
        tokenizer=f"{REP_ROOT}/data/tokenizer",
        code=code("train_reference.py", variants=()),
    output:
        model=directory(REP_TREE.ref_model()),
        log_csv=f"{REP_TREE.train_dir(REF)}/sft_log.csv",
        run=REP_TREE.run_json(REF),
    log:
        f"{LOGS}/replicates/seed_{{rep}}/train_reference.log",
    benchmark:
        f"{BENCH}/replicates/seed_{{rep}}/train_reference.tsv"
    params:
        settings=lambda w: {**settings("organism"), "seed": int(w.rep)},


use rule train_grpo as replicate_train with:
    input:
        ref=REP_TREE.run_json(REF),
        prompts=grpo_prompts(REP_TREE),
        code=lambda w: code("train_grpo.py", variants=[REP_RUN_TABLE[w.run].variant]),
    output:
        run=REP_TREE.run_json("{run}"),
        log_csv=REP_TREE.train_log("{run}"),
    log:
        f"{LOGS}/replicates/seed_{{rep}}/train/{{run}}.log",
    benchmark:
        f"{BENCH}/replicates/seed_{{rep}}/train/{{run}}.tsv"
    wildcard_constraints:
        run=constraint(REP_RUN_TABLE),
    params:
        run=lambda w: grpo_run(
            config,
            REP_RUN_TABLE[w.run].variant,
            REP_RUN_TABLE[w.run].seed,
            data_seed=int(w.rep),
        ).params(),
        ref=lambda w: rep_tree(w).ref_model(),
        n_epoch_prompts=N_EPOCH_PROMPTS,


use rule evaluate_reference as replicate_evaluate_ref with:
    input:
        data=eval_data(REP_TREE),
        model=REP_TREE.run_json(REF),
        code=code("evaluate_run.py", variants=()),  # reads no variant record
    output:
        tables=[t.csv for t in rep_tasks(REP_ROOT, REF)],
        meta=[t.json for t in rep_tasks(REP_ROOT, REF)],
    log:
        f"{LOGS}/replicates/seed_{{rep}}/evaluate_ref.log",
    benchmark:
        f"{BENCH}/replicates/seed_{{rep}}/evaluate_ref.tsv"
    params:
        run=REF,
        models=lambda w: {0: rep_tree(w).ref_model()},
        tasks=lambda w: [t.as_dict() for t in rep_tasks(rep_tree(w).root, REF)],
        splits=EVAL_SPLITS,
        settings=lambda w: {**cfg.eval_settings(config), "seed": int(w.rep)},


use rule evaluate_run as replicate_evaluate with:
    input:
        data=eval_data(REP_TREE),
        model=REP_TREE.run_json("{run}"),
        code=code("evaluate_run.py", variants=()),  # reads no variant record
    output:
        tables=[t.csv for t in rep_tasks(REP_ROOT, "{run}")],
        meta=[t.json for t in rep_tasks(REP_ROOT, "{run}")],
    log:
        f"{LOGS}/replicates/seed_{{rep}}/evaluate/{{run}}.log",
    benchmark:
        f"{BENCH}/replicates/seed_{{rep}}/evaluate/{{run}}.tsv"
    wildcard_constraints:
        run=constraint(REP_RUN_TABLE),
    params:
        run=lambda w: w.run,
        models=lambda w: rep_tree(w).checkpoints(w.run, STEPS[-1:]),
        tasks=lambda w: [t.as_dict() for t in rep_tasks(rep_tree(w).root, w.run)],
        splits=EVAL_SPLITS,
        settings=lambda w: {**cfg.eval_settings(config), "seed": int(w.rep)},


use rule report_temperature as replicate_temperature with:
    input:
        tables=lambda w: [e["path"] for e in rep_entries(rep_tree(w).root)],
        data=[REP_TREE.split_file(s) for s in TEMP_SPLITS],
        code=code("report_temperature.py"),
    output:
        curve=f"{REP_ROOT}/report/data/temperature_curve.csv",
        best=f"{REP_ROOT}/report/data/best_vs_best.csv",
        pass_k=f"{REP_ROOT}/report/data/pass_at_k.csv",
    log:
        f"{LOGS}/replicates/seed_{{rep}}/report_temperature.log",
    benchmark:
        f"{BENCH}/replicates/seed_{{rep}}/report_temperature.tsv"
    params:
        entries=lambda w: rep_entries(rep_tree(w).root),
        splits=TEMP_SPLITS,
        headline="test" if "test" in TEMP_SPLITS else TEMP_SPLITS[0] if TEMP_SPLITS else None,
        n_bootstrap=config["report"]["n_bootstrap"],
        seed=config["seed"],


rule replicates_summary:
    """Every replicate of pi_ref side by side: each variant at its best temperature against pi_ref
    at its best, pooled over GRPO seeds and per seed (results/replicates/summary.{csv,md})."""
    input:
        best=[rep_best(s) for s in REP_SEEDS],
        code=code("replicates_summary.py"),
    output:
        csv=f"{REP_DIR}/summary.csv",
        md=f"{REP_DIR}/summary.md",
    log:
        f"{LOGS}/replicates/replicates_summary.log",
    benchmark:
        f"{BENCH}/replicates/replicates_summary.tsv"
    conda:
        ENV
    threads: 1
    params:
        seeds=REP_SEEDS,
        variants=REP_VARIANTS,
    script:
        "../scripts/replicates_summary.py"


rule replicates:
    """Named target: every replicate of pi_ref trained, evaluated and compared."""
    input:
        rules.replicates_summary.output,
