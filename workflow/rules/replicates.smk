"""Named target `replicates` (Thm 1 vs sharpening, held out): the comparison of each variant at its
best sampling temperature with pi_ref at ITS best, repeated on other replicates of pi_ref. A
replicate is a data and SFT seed of replicates.seeds: new problems, new SFT data, a new pi_ref; on
it, replicates.variants are trained with every GRPO seed of train.seeds and evaluated (final
checkpoint and pi_ref, every temperature of eval.temperatures) exactly as the default graph does,
by the same rules (`use rule`) under results/replicates/seed_{rep}/. results/replicates/summary.md
puts every replicate (the default graph's pi_ref, `seed`, included) side by side
(grpo_repro.report.replicates.replicate_table). The built organism only.
"""


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
        train=f"{REP_ROOT}/data/sft.jsonl",
        tokenizer=f"{REP_ROOT}/data/tokenizer",
        code=code("train_reference.py"),
    output:
        model=directory(f"{REP_ROOT}/train/ref/model"),
        log_csv=f"{REP_ROOT}/train/ref/sft_log.csv",
        run=f"{REP_ROOT}/train/ref/run.json",
    log:
        f"{LOGS}/replicates/seed_{{rep}}/train_reference.log",
    benchmark:
        f"{BENCH}/replicates/seed_{{rep}}/train_reference.tsv"
    params:
        settings=lambda w: {**settings("organism"), "seed": int(w.rep)},


use rule train_grpo as replicate_train with:
    input:
        ref=f"{REP_ROOT}/train/ref/run.json",
        prompts=f"{REP_ROOT}/data/"
        + ("train_pool" if config["train"]["on_pool"] else "train")
        + ".jsonl",
        code=code("train_grpo.py"),
    output:
        run=f"{REP_ROOT}/train/{{variant}}/seed_{{seed}}/run.json",
        log_csv=f"{REP_ROOT}/train/{{variant}}/seed_{{seed}}/train_log.csv",
    log:
        f"{LOGS}/replicates/seed_{{rep}}/train_grpo_{{variant}}_seed_{{seed}}.log",
    benchmark:
        f"{BENCH}/replicates/seed_{{rep}}/train_grpo_{{variant}}_seed_{{seed}}.tsv"
    params:
        settings=lambda w: {**cfg.train_settings(config, w.variant), "seed": int(w.rep)},
        ref=lambda w: f"{rep_root(w)}/train/ref/model",
        n_epoch_prompts=N_EPOCH_PROMPTS,


use rule evaluate_reference as replicate_evaluate_ref with:
    input:
        data=[split_file(s, REP_ROOT) for s in EVAL_SPLITS],
        model=f"{REP_ROOT}/train/ref/run.json",
        code=code("evaluate_run.py"),
    output:
        tables=[t.csv for t in rep_tasks(REP_ROOT, "ref")],
        meta=[t.json for t in rep_tasks(REP_ROOT, "ref")],
    log:
        f"{LOGS}/replicates/seed_{{rep}}/evaluate_ref.log",
    benchmark:
        f"{BENCH}/replicates/seed_{{rep}}/evaluate_ref.tsv"
    params:
        run="ref",
        models=lambda w: {0: f"{rep_root(w)}/train/ref/model"},
        tasks=lambda w: [t.as_dict() for t in rep_tasks(rep_root(w), "ref")],
        splits=EVAL_SPLITS,
        settings=lambda w: {**cfg.eval_settings(config), "seed": int(w.rep)},


use rule evaluate_run as replicate_evaluate with:
    input:
        data=[split_file(s, REP_ROOT) for s in EVAL_SPLITS],
        model=f"{REP_ROOT}/train/{{variant}}/seed_{{seed}}/run.json",
        code=code("evaluate_run.py"),
    output:
        tables=[t.csv for t in rep_tasks(REP_ROOT, RUN_WILDCARDS)],
        meta=[t.json for t in rep_tasks(REP_ROOT, RUN_WILDCARDS)],
    log:
        f"{LOGS}/replicates/seed_{{rep}}/evaluate_{{variant}}_seed_{{seed}}.log",
    benchmark:
        f"{BENCH}/replicates/seed_{{rep}}/evaluate_{{variant}}_seed_{{seed}}.tsv"
    params:
        run=lambda w: f"{w.variant}/seed_{w.seed}",
        models=lambda w: {
            int(
                STEPS[-1]
            ): f"{rep_root(w)}/train/{w.variant}/seed_{w.seed}/checkpoints/step_{STEPS[-1]}"
        },
        tasks=lambda w: [t.as_dict() for t in rep_tasks(rep_root(w), f"{w.variant}/seed_{w.seed}")],
        splits=EVAL_SPLITS,
        settings=lambda w: {**cfg.eval_settings(config), "seed": int(w.rep)},


use rule report_temperature as replicate_temperature with:
    input:
        tables=lambda w: [e["path"] for e in rep_entries(rep_root(w))],
        data=[split_file(s, REP_ROOT) for s in TEMP_SPLITS],
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
        entries=lambda w: rep_entries(rep_root(w)),
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
        variants=REP["variants"],
    script:
        "../scripts/replicates_summary.py"


rule replicates:
    """Named target: every replicate of pi_ref trained, evaluated and compared."""
    input:
        rules.replicates_summary.output,
