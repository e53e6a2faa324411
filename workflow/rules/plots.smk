# Stage 5: trajectories (the paper's Fig 3), success amplification (Thm 3), theory overlay (Thm 2, 5,
# Sec. 5), summary (results/summary.{json,md}) and the report's figures and tables.
#
# Compute rules (final_*) read the evaluation tables, training runs and derivations and write CSV/JSON
# under results/plots/data/; plot rules (plot_*) read only those files and write PNG + PDF (and one
# HTML table) under results/plots/. Editing a plot script or grpo_repro/final/plots.py or the shared
# style reruns plot rules only, never evaluation or training (tests/test_final.py checks it).
# Needs from common.smk: VARIANTS, STEPS, RESULTS, LOGS, N_EPOCH_PROMPTS, config,
# train_done(variant), theory_targets().

from grpo_repro.final.tables import eval_entries as _final_eval_entries

FINAL = f"{RESULTS}/plots"
FINAL_DATA = f"{RESULTS}/plots/data"
FINAL_SPLITS = list(config["eval"]["splits"])
_FINAL_SRC = "workflow/src/grpo_repro/final"
_PKG_SRC = "workflow/src/grpo_repro"
_FINAL_ENTRIES = _final_eval_entries(RESULTS, VARIANTS, FINAL_SPLITS, STEPS)
# the plotting code every plot rule depends on (a restyle reruns the plots, nothing else)
_PLOT_SRC = [f"{_FINAL_SRC}/plots.py", f"{_PKG_SRC}/plotting/style.py"]
_REPORT_CATEGORY = "5. Final stage (evaluation)"


def plots_data_targets():
    """CSV/JSON written by the compute rules of the final stage."""
    return [
        f"{FINAL_DATA}/eval_long.csv",
        f"{FINAL_DATA}/trajectories.csv",
        f"{FINAL_DATA}/amplification_mean.csv",
        f"{FINAL_DATA}/amplification_prompts.csv",
        f"{FINAL_DATA}/amplification_shares.csv",
        f"{FINAL_DATA}/paired_diff.csv",
        f"{FINAL_DATA}/overlay_trajectories.csv",
        f"{FINAL_DATA}/overlay_curves.csv",
        f"{FINAL_DATA}/overlay_summary.csv",
        f"{RESULTS}/summary.json",
        f"{RESULTS}/summary.md",
    ]


def plots_figure_targets():
    """Figures (PNG + PDF) and the HTML summary table drawn by the plot rules."""
    stems = [f"{FINAL}/amplification_mean"]
    for split in FINAL_SPLITS:
        stems += [f"{FINAL}/trajectories_{split}", f"{FINAL}/amplification_scatter_{split}",
                  f"{FINAL}/amplification_hist_{split}", f"{FINAL}/overlay_{split}"]
    return [f"{s}.{ext}" for s in stems for ext in ("png", "pdf")] + [f"{FINAL}/summary_table.html"]


def plots_targets():
    """Every output of the final stage (add to all_targets() in common.smk)."""
    return plots_data_targets() + plots_figure_targets()


rule final_all:
    """Every output of stage 5 (`snakemake -c2 final_all`)."""
    input:
        plots_targets(),


# ---------------------------------------------------------------------------------------------
# compute rules: CSV / JSON
# ---------------------------------------------------------------------------------------------
rule final_tables:
    """Sec. 6: every evaluation table -> one long CSV; pi_ref (step 0) repeated under each variant."""
    input:
        tables=[e["path"] for e in _FINAL_ENTRIES],
        src=[f"{_FINAL_SRC}/__init__.py", f"{_FINAL_SRC}/tables.py"],
    output:
        long=f"{FINAL_DATA}/eval_long.csv",
    params:
        entries=_FINAL_ENTRIES,
        variants=VARIANTS,
        steps=STEPS,
    log:
        f"{LOGS}/plots/final_tables.log",
    benchmark:
        f"{BENCH}/plots/final_tables.tsv",
    threads: 1
    script:
        "../scripts/final_tables.py"


rule final_trajectories:
    """Fig 3: a seeded random choice of prompts per split, their success along checkpoints."""
    input:
        long=rules.final_tables.output.long,
        src=f"{_FINAL_SRC}/tables.py",
    output:
        csv=f"{FINAL_DATA}/trajectories.csv",
    params:
        n_prompts=config["plots"]["n_trajectory_prompts"],
        seed=config["seed"],
    log:
        f"{LOGS}/plots/final_trajectories.log",
    benchmark:
        f"{BENCH}/plots/final_trajectories.tsv",
    threads: 1
    script:
        "../scripts/final_trajectories.py"


rule final_amplification:
    """Thm 3: mean success per step (bootstrap over prompts), p_ref vs final p, paired final - p_ref."""
    input:
        long=rules.final_tables.output.long,
        src=[f"{_FINAL_SRC}/amplification.py", f"{_FINAL_SRC}/tables.py", f"{_PKG_SRC}/stats.py"],
    output:
        mean=f"{FINAL_DATA}/amplification_mean.csv",
        prompts=f"{FINAL_DATA}/amplification_prompts.csv",
        shares=f"{FINAL_DATA}/amplification_shares.csv",
        paired=f"{FINAL_DATA}/paired_diff.csv",
    params:
        n_bootstrap=config["plots"]["n_bootstrap"],
        seed=config["seed"],
    log:
        f"{LOGS}/plots/final_amplification.log",
    benchmark:
        f"{BENCH}/plots/final_amplification.tsv",
    threads: 1
    script:
        "../scripts/final_amplification.py"


rule final_overlay:
    """Thm 2, Thm 5, Sec. 5: each variant's recurrence from the measured p_ref beside the measurement."""
    input:
        long=rules.final_tables.output.long,
        runs=[train_done(v) for v in VARIANTS],
        src=[f"{_FINAL_SRC}/overlay.py", f"{_FINAL_SRC}/tables.py", f"{_PKG_SRC}/dynamics.py",
             f"{_PKG_SRC}/fixed_points.py"],
    output:
        trajectories=f"{FINAL_DATA}/overlay_trajectories.csv",
        curves=f"{FINAL_DATA}/overlay_curves.csv",
        summary=f"{FINAL_DATA}/overlay_summary.csv",
    params:
        variants=VARIANTS,
        n_epoch_prompts=N_EPOCH_PROMPTS,
        n_prompts=config["plots"]["n_trajectory_prompts"],
        seed=config["seed"],
    log:
        f"{LOGS}/plots/final_overlay.log",
    benchmark:
        f"{BENCH}/plots/final_overlay.tsv",
    threads: 1
    script:
        "../scripts/final_overlay.py"


rule final_summary:
    """results/summary.{json,md}: the run in numbers beside the paper's (Sec. 6), with the config."""
    input:
        mean=rules.final_amplification.output.mean,
        paired=rules.final_amplification.output.paired,
        shares=rules.final_amplification.output.shares,
        overlay=rules.final_overlay.output.summary,
        derivations=theory_targets()[0],
        runs=[train_done(v) for v in VARIANTS],
        train_logs=[f"{RESULTS}/train/{v}/train_log.csv" for v in VARIANTS],
        src=f"{_FINAL_SRC}/summary.py",
    output:
        json=f"{RESULTS}/summary.json",
        md=f"{RESULTS}/summary.md",
    params:
        variants=VARIANTS,
        config=config,
        benchmarks=f"{RESULTS}/benchmarks",  # optional Snakemake benchmark files, read if present
    log:
        f"{LOGS}/plots/final_summary.log",
    benchmark:
        f"{BENCH}/plots/final_summary.tsv",
    threads: 1
    script:
        "../scripts/summary.py"


# ---------------------------------------------------------------------------------------------
# plot rules: read CSV / JSON only
# ---------------------------------------------------------------------------------------------
rule plot_trajectories:
    """Fig 3: per-prompt success along checkpoints, Wilson 95% bars, one panel per variant."""
    input:
        csv=rules.final_trajectories.output.csv,
        src=_PLOT_SRC,
    output:
        png=report(f"{FINAL}/trajectories_{{split}}.png", caption="../report/trajectories.rst",
                   category=_REPORT_CATEGORY, subcategory="Trajectories (Fig 3)",
                   labels={"figure": "trajectories", "split": "{split}"}),
        pdf=f"{FINAL}/trajectories_{{split}}.pdf",
    params:
        variants=VARIANTS,
    log:
        f"{LOGS}/plots/plot_trajectories_{{split}}.log",
    benchmark:
        f"{BENCH}/plots/plot_trajectories_{{split}}.tsv",
    threads: 1
    script:
        "../scripts/plots_trajectories.py"


rule plot_amplification_mean:
    """Mean success vs training step, every variant, 95% bootstrap band over prompts."""
    input:
        mean=rules.final_amplification.output.mean,
        src=_PLOT_SRC,
    output:
        png=report(f"{FINAL}/amplification_mean.png", caption="../report/amplification_mean.rst",
                   category=_REPORT_CATEGORY, subcategory="Success amplification",
                   labels={"figure": "mean success", "split": "all"}),
        pdf=f"{FINAL}/amplification_mean.pdf",
    params:
        variants=VARIANTS,
        splits=FINAL_SPLITS,
    log:
        f"{LOGS}/plots/plot_amplification_mean.log",
    benchmark:
        f"{BENCH}/plots/plot_amplification_mean.tsv",
    threads: 1
    script:
        "../scripts/plots_amplification_mean.py"


rule plot_amplification:
    """p_ref vs final p per prompt with the diagonal and the shares; histograms of p_ref and final p."""
    input:
        prompts=rules.final_amplification.output.prompts,
        shares=rules.final_amplification.output.shares,
        src=_PLOT_SRC,
    output:
        scatter_png=report(f"{FINAL}/amplification_scatter_{{split}}.png",
                           caption="../report/amplification_scatter.rst", category=_REPORT_CATEGORY,
                           subcategory="Success amplification",
                           labels={"figure": "p_ref vs final p", "split": "{split}"}),
        scatter_pdf=f"{FINAL}/amplification_scatter_{{split}}.pdf",
        hist_png=report(f"{FINAL}/amplification_hist_{{split}}.png",
                        caption="../report/amplification_hist.rst", category=_REPORT_CATEGORY,
                        subcategory="Success amplification",
                        labels={"figure": "histograms", "split": "{split}"}),
        hist_pdf=f"{FINAL}/amplification_hist_{{split}}.pdf",
    params:
        variants=VARIANTS,
    log:
        f"{LOGS}/plots/plot_amplification_{{split}}.log",
    benchmark:
        f"{BENCH}/plots/plot_amplification_{{split}}.tsv",
    threads: 1
    script:
        "../scripts/plots_amplification.py"


rule plot_overlay:
    """Measured trajectories beside each variant's predicted recurrence (Thm 2, Thm 5, Sec. 5)."""
    input:
        trajectories=rules.final_overlay.output.trajectories,
        curves=rules.final_overlay.output.curves,
        src=_PLOT_SRC,
    output:
        png=report(f"{FINAL}/overlay_{{split}}.png", caption="../report/overlay.rst",
                   category=_REPORT_CATEGORY, subcategory="Theory overlay",
                   labels={"figure": "theory overlay", "split": "{split}"}),
        pdf=f"{FINAL}/overlay_{{split}}.pdf",
    params:
        variants=VARIANTS,
    log:
        f"{LOGS}/plots/plot_overlay_{{split}}.log",
    benchmark:
        f"{BENCH}/plots/plot_overlay_{{split}}.tsv",
    threads: 1
    script:
        "../scripts/plots_overlay.py"


rule plot_summary_table:
    """results/summary.json's tables as one HTML page for the report."""
    input:
        json=rules.final_summary.output.json,
        src=f"{_FINAL_SRC}/plots.py",
    output:
        html=report(f"{FINAL}/summary_table.html", caption="../report/summary_table.rst",
                    category=_REPORT_CATEGORY, subcategory="Summary",
                    labels={"figure": "summary table", "split": "all"}),
    log:
        f"{LOGS}/plots/plot_summary_table.log",
    benchmark:
        f"{BENCH}/plots/plot_summary_table.tsv",
    threads: 1
    script:
        "../scripts/plots_summary_table.py"
