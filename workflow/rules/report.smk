"""Stage report: trajectories (the paper's Fig 3), success amplification (Thm 3), theory overlay
(Thm 2, 5, Sec. 5), results/summary.{json,md} and the report's figures and tables.

Compute rules (report_*) read the evaluation tables, training runs and derivations and write
CSV/JSON under results/report/data/ (grpo_repro.report); plot rules (report_plot_*, generated from
grpo_repro.report.registry.PLOTS) read only those files and write PNG + PDF (and one HTML table)
under results/report/. Editing plotting code reruns plot rules only, never evaluation or training.
"""


include: "helpers/report.smk"  # the stage's tables and helpers


rule report_training:
    """Training curves' data: reward, KL, entropy, completion length, clip ratio per run and step."""
    input:
        logs=[TREE.train_log(r) for r in RUNS],
        code=code("report_training.py"),
    output:
        csv=f"{REPORT_DATA}/training.csv",
    log:
        f"{LOGS}/report/report_training.log",
    benchmark:
        f"{BENCH}/report/report_training.tsv"
    conda:
        ENV
    threads: 1
    params:
        runs=RUNS,
    script:
        "../scripts/report_training.py"


rule report_landing:
    """The report's landing page (results/report/landing.rst): the success-against-temperature
    picture first (embedded), then the headline numbers read from results/summary.json, one line
    per verdict, the theory stage's pass count, the configuration's differences from the paper
    (the Snakefile's `report:` page)."""
    input:
        json=f"{RESULTS}/summary.json",
        picture=LANDING_PICTURE,
        fp_picture=FP_COMPACT_PICTURE,  # plateau against p*_G per prompt (none without the study)
        zero_picture=f"{RESULTS}/zero/zero.png" if config["zero"] else [],  # the zero study's
        code=code("report_landing.py"),
    output:
        rst=f"{REPORT}/landing.rst",
    log:
        f"{LOGS}/report/report_landing.log",
    benchmark:
        f"{BENCH}/report/report_landing.tsv"
    conda:
        ENV
    threads: 1
    script:
        "../scripts/report_landing.py"


rule report_tables:
    """Sec. 6: every evaluation table -> one long CSV; pi_ref (step 0) repeated under each variant."""
    input:
        tables=[e["path"] for e in EVAL_ENTRIES],
        code=code("report_tables.py"),
    output:
        long=f"{REPORT_DATA}/eval_long.csv",
    log:
        f"{LOGS}/report/report_tables.log",
    benchmark:
        f"{BENCH}/report/report_tables.tsv"
    conda:
        ENV
    threads: 1
    params:
        entries=EVAL_ENTRIES,
        variants=VARIANTS,
        steps=STEPS,
    script:
        "../scripts/report_tables.py"


rule report_trajectories:
    """Fig 3: a seeded random choice of prompts per split, their success along checkpoints."""
    input:
        long=rules.report_tables.output.long,
        code=code("report_trajectories.py"),
    output:
        csv=f"{REPORT_DATA}/trajectories.csv",
    log:
        f"{LOGS}/report/report_trajectories.log",
    benchmark:
        f"{BENCH}/report/report_trajectories.tsv"
    conda:
        ENV
    threads: 1
    params:
        n_prompts=config["report"]["n_trajectory_prompts"],
        seed=config["seed"],
    script:
        "../scripts/report_trajectories.py"


rule report_amplification:
    """Thm 3: mean success per step (bootstrap over prompts), p_ref vs final p, paired final - p_ref."""
    input:
        long=rules.report_tables.output.long,
        code=code("report_amplification.py"),
    output:
        mean=f"{REPORT_DATA}/amplification_mean.csv",
        prompts=f"{REPORT_DATA}/amplification_prompts.csv",
        shares=f"{REPORT_DATA}/amplification_shares.csv",
        paired=f"{REPORT_DATA}/paired_diff.csv",
    log:
        f"{LOGS}/report/report_amplification.log",
    benchmark:
        f"{BENCH}/report/report_amplification.tsv"
    conda:
        ENV
    threads: 1
    params:
        n_bootstrap=config["report"]["n_bootstrap"],
        seed=config["seed"],
    script:
        "../scripts/report_amplification.py"


rule report_overlay:
    """Thm 2, Thm 5, Sec. 5: each variant's recurrence from the measured p_ref beside the measurement."""
    input:
        long=rules.report_tables.output.long,
        runs=[TREE.run_json(run_name(v, SEEDS[0])) for v in VARIANTS],  # each variant's settings
        code=code("report_overlay.py"),
    output:
        trajectories=f"{REPORT_DATA}/overlay_trajectories.csv",
        curves=f"{REPORT_DATA}/overlay_curves.csv",
        summary=f"{REPORT_DATA}/overlay_summary.csv",
    log:
        f"{LOGS}/report/report_overlay.log",
    benchmark:
        f"{BENCH}/report/report_overlay.tsv"
    conda:
        ENV
    threads: 1
    params:
        variants=VARIANTS,
        n_epoch_prompts=N_EPOCH_PROMPTS,
        n_prompts=config["report"]["n_trajectory_prompts"],
        seed=config["seed"],
    script:
        "../scripts/report_overlay.py"


rule report_temperature:
    """Thm 1 vs sharpening: success against the sampling temperature (pi_ref and every variant's
    final checkpoint, per problem class), best temperature against best temperature, pass@k."""
    input:
        tables=[e["path"] for e in TEMP_ENTRIES],
        data=[TREE.split_file(s) for s in TEMP_SPLITS],
        code=code("report_temperature.py"),
    output:
        curve=f"{REPORT_DATA}/temperature_curve.csv",
        best=f"{REPORT_DATA}/best_vs_best.csv",
        pass_k=f"{REPORT_DATA}/pass_at_k.csv",
    log:
        f"{LOGS}/report/report_temperature.log",
    benchmark:
        f"{BENCH}/report/report_temperature.tsv"
    conda:
        ENV
    threads: 1
    params:
        entries=TEMP_ENTRIES,
        splits=TEMP_SPLITS,
        headline="test" if "test" in TEMP_SPLITS else TEMP_SPLITS[0] if TEMP_SPLITS else None,
        n_bootstrap=config["report"]["n_bootstrap"],
        seed=config["seed"],
    script:
        "../scripts/report_temperature.py"


rule report_summary:
    """results/summary.{json,md}: the run in numbers beside the paper's (Sec. 6), with the config."""
    input:
        **({"best": rules.report_temperature.output.best} if TEMP_ENTRIES else {}),
        **({"curve": rules.report_temperature.output.curve} if TEMP_ENTRIES else {}),
        **FP_COMPACT_DATA,  # the compact study's summary and resampling (none without it)
        # the zero-success study's section (none without it)
        **({"zero": f"{RESULTS}/zero/data/zero.json"} if config["zero"] else {}),
        mean=rules.report_amplification.output.mean,
        paired=rules.report_amplification.output.paired,
        shares=rules.report_amplification.output.shares,
        overlay=rules.report_overlay.output.summary,
        derivations=rules.theory_derivations.output.json,
        splits=rules.data_prepare.output.stats,
        runs=[TREE.run_json(run_name(v, SEEDS[0])) for v in VARIANTS],  # each variant's settings
        train_logs=[TREE.train_log(r) for r in RUNS],
        code=code("report_summary.py"),
    output:
        json=f"{RESULTS}/summary.json",
        md=f"{RESULTS}/summary.md",
    log:
        f"{LOGS}/report/report_summary.log",
    benchmark:
        f"{BENCH}/report/report_summary.tsv"
    conda:
        ENV
    threads: 1
    params:
        variants=VARIANTS,
        runs=RUNS,
        config=cfg.without_speed_only(config),  # speed-only settings rerun nothing
        fixed_point={k: FP[k] for k in ("compact", "ref_samples", "prompts_per_step")},
        benchmarks=BENCH,  # optional Snakemake benchmark files, read if present
    script:
        "../scripts/report_summary.py"


for plot in REPORT_PLOTS:

    rule:
        name:
            f"report_plot_{plot.name}"
        input:
            **{k: f"{RESULTS}/{v}" for k, v in plot.inputs.items()},
            code=code("report_plot.py", report_module(plot.func)),
        output:
            report_figures(plot, "{split}" if plot.per_split else None),
        log:
            f"{LOGS}/report/report_plot_{plot.name}"
            + ("_{split}" if plot.per_split else "")
            + ".log",
        benchmark:
            f"{BENCH}/report/report_plot_{plot.name}"
            + ("_{split}" if plot.per_split else "")
            + ".tsv"
        conda:
            ENV
        threads: 1
        params:
            func=plot.func,
            variants=VARIANTS,
            splits=SPLITS,
        script:
            "../scripts/report_plot.py"


rule report_all:
    """Every output of the report stage (`snakemake -c2 report_all`)."""
    input:
        report_targets(),
