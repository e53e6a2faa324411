"""Stage report: trajectories (the paper's Fig 3), success amplification (Thm 3), theory overlay
(Thm 2, 5, Sec. 5), results/summary.{json,md} and the report's figures and tables.

Compute rules (report_*) read the evaluation tables, training runs and derivations and write
CSV/JSON under results/report/data/ (grpo_repro.report); plot rules (report_plot_*, generated from
grpo_repro.report.registry.PLOTS) read only those files and write PNG + PDF (and one HTML table)
under results/report/. Editing plotting code reruns plot rules only, never evaluation or training.
"""

from grpo_repro import config as cfg
from grpo_repro.report.registry import module_of as report_module
from grpo_repro.runs import run_name


rule report_training:
    """Training curves' data: reward, KL, entropy, completion length, clip ratio per run and step."""
    input:
        logs=[P.tree.train_log(r) for r in P.runs],
        code=code("report_training.py"),
    output:
        csv=f"{P.report_data}/training.csv",
    log:
        f"{P.logs}/report/report_training.log",
    benchmark:
        f"{P.bench}/report/report_training.tsv"
    conda:
        P.env
    params:
        runs=P.runs,
    script:
        "../scripts/report_training.py"


rule report_landing:
    """The report's landing page (results/report/landing.rst): the success-against-temperature
    picture first (embedded), then the headline numbers read from results/summary.json, one line
    per verdict, the theory stage's pass count, the configuration's differences from the paper
    (the Snakefile's `report:` page)."""
    input:
        json=f"{P.results}/summary.json",
        picture=P.landing_picture,
        fp_picture=P.fp_compact_picture,  # plateau against p*_G per prompt (none without the study)
        zero_picture=f"{P.results}/zero/zero.png" if config["zero"] else [],  # the zero study's
        code=code("report_landing.py"),
    output:
        rst=f"{P.report}/landing.rst",
    log:
        f"{P.logs}/report/report_landing.log",
    benchmark:
        f"{P.bench}/report/report_landing.tsv"
    conda:
        P.env
    script:
        "../scripts/report_landing.py"


rule report_tables:
    """Sec. 6: every evaluation table -> one long CSV; pi_ref (step 0) repeated under each variant."""
    input:
        tables=[e["path"] for e in P.eval_entries],
        code=code("report_tables.py"),
    output:
        long=f"{P.report_data}/eval_long.csv",
    log:
        f"{P.logs}/report/report_tables.log",
    benchmark:
        f"{P.bench}/report/report_tables.tsv"
    conda:
        P.env
    params:
        entries=P.eval_entries,
        steps=P.steps,
    script:
        "../scripts/report_tables.py"


rule report_trajectories:
    """Fig 3: a seeded random choice of prompts per split, their success along checkpoints."""
    input:
        long=rules.report_tables.output.long,
        code=code("report_trajectories.py"),
    output:
        csv=f"{P.report_data}/trajectories.csv",
    log:
        f"{P.logs}/report/report_trajectories.log",
    benchmark:
        f"{P.bench}/report/report_trajectories.tsv"
    conda:
        P.env
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
        mean=f"{P.report_data}/amplification_mean.csv",
        prompts=f"{P.report_data}/amplification_prompts.csv",
        shares=f"{P.report_data}/amplification_shares.csv",
        paired=f"{P.report_data}/paired_diff.csv",
    log:
        f"{P.logs}/report/report_amplification.log",
    benchmark:
        f"{P.bench}/report/report_amplification.tsv"
    conda:
        P.env
    params:
        n_bootstrap=config["report"]["n_bootstrap"],
        seed=config["seed"],
    script:
        "../scripts/report_amplification.py"


rule report_overlay:
    """Thm 2, Thm 5, Sec. 5: each variant's recurrence from the measured p_ref beside the measurement."""
    input:
        long=rules.report_tables.output.long,
        runs=[P.tree.run_json(run_name(v, P.seeds[0])) for v in P.variants],  # each variant's settings
        code=code("report_overlay.py"),
    output:
        trajectories=f"{P.report_data}/overlay_trajectories.csv",
        curves=f"{P.report_data}/overlay_curves.csv",
        summary=f"{P.report_data}/overlay_summary.csv",
    log:
        f"{P.logs}/report/report_overlay.log",
    benchmark:
        f"{P.bench}/report/report_overlay.tsv"
    conda:
        P.env
    params:
        variants=P.variants,
        n_epoch_prompts=P.n_epoch_prompts,
        n_prompts=config["report"]["n_trajectory_prompts"],
        seed=config["seed"],
    script:
        "../scripts/report_overlay.py"


rule report_temperature:
    """Thm 1 vs sharpening: success against the sampling temperature (pi_ref and every variant's
    final checkpoint, per problem class), best temperature against best temperature, pass@k."""
    input:
        tables=[e["path"] for e in P.temp_entries],
        data=[P.tree.split_file(s) for s in P.temp_splits],
        code=code("report_temperature.py"),
    output:
        curve=f"{P.report_data}/temperature_curve.csv",
        best=f"{P.report_data}/best_vs_best.csv",
        pass_k=f"{P.report_data}/pass_at_k.csv",
    log:
        f"{P.logs}/report/report_temperature.log",
    benchmark:
        f"{P.bench}/report/report_temperature.tsv"
    conda:
        P.env
    params:
        entries=P.temp_entries,
        splits=P.temp_splits,
        headline="test" if "test" in P.temp_splits else P.temp_splits[0] if P.temp_splits else None,
        n_bootstrap=config["report"]["n_bootstrap"],
        seed=config["seed"],
    script:
        "../scripts/report_temperature.py"


rule report_summary:
    """results/summary.{json,md}: the run in numbers beside the paper's (Sec. 6), with the config."""
    input:
        **({"best": rules.report_temperature.output.best} if P.temp_entries else {}),
        **({"curve": rules.report_temperature.output.curve} if P.temp_entries else {}),
        **P.fp_compact_data,  # the compact study's summary and resampling (none without it)
        # the zero-success study's section (none without it)
        **({"zero": f"{P.results}/zero/data/zero.json"} if config["zero"] else {}),
        mean=rules.report_amplification.output.mean,
        paired=rules.report_amplification.output.paired,
        shares=rules.report_amplification.output.shares,
        overlay=rules.report_overlay.output.summary,
        derivations=rules.theory_derivations.output.json,
        splits=rules.data_prepare.output.stats,
        runs=[P.tree.run_json(run_name(v, P.seeds[0])) for v in P.variants],  # each variant's settings
        train_logs=[P.tree.train_log(r) for r in P.runs],
        code=code("report_summary.py"),
    output:
        json=f"{P.results}/summary.json",
        md=f"{P.results}/summary.md",
    log:
        f"{P.logs}/report/report_summary.log",
    benchmark:
        f"{P.bench}/report/report_summary.tsv"
    conda:
        P.env
    params:
        variants=P.variants,
        runs=P.runs,
        config=cfg.without_speed_only(config),  # speed-only settings rerun nothing
        fixed_point={k: P.fp[k] for k in ("compact", "ref_samples", "prompts_per_step")},
        benchmarks=P.bench,  # optional Snakemake benchmark files, read if present
    script:
        "../scripts/report_summary.py"


for plot in P.report_plots:
    job = f"report_plot_{plot.name}" + ("_{split}" if plot.per_split else "")  # log, benchmark

    rule:
        f"""{plot.doc}"""
        name:
            f"report_plot_{plot.name}"
        input:
            **{k: f"{P.results}/{v}" for k, v in plot.inputs.items()},
            code=code("report_plot.py", report_module(plot.func)),
        output:
            [
                report(p, **kw) if kw else p
                for p, kw in P.report_figures(plot, "{split}" if plot.per_split else None)
            ],
        log:
            f"{P.logs}/report/{job}.log",
        benchmark:
            f"{P.bench}/report/{job}.tsv"
        conda:
            P.env
        params:
            func=plot.func,
            variants=P.variants,
            splits=P.splits,
        script:
            "../scripts/report_plot.py"


rule report_all:
    """Every output of the report stage (`snakemake -c2 report_all`)."""
    input:
        [f for r in P.report_compute for f in getattr(rules, r).output],
        P.report_plot_files(),
