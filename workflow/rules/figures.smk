"""Stage 2: the paper's numerical figures and beyond (Mroueh, arXiv 2503.06639).

Fig 1 (weights w+, w-, eq. 4), Fig 2 (h_{eps,p_ref} and its fixed points, Thm 2-3), Fig 4 (B(p*),
Thm 6), Fig 5 (iterations p_{n+1} = h(p_n)); beyond the paper: the fixed-point map over (beta,
p_ref), a bifurcation diagram with every 2-cycle, the PoS recurrences of every variant (Thm 2, 5, 9,
Sec. 5) and a finite-policy oracle (exact Gibbs iterates, Thm 8; sample-based GRPO vs Thm 10).

Compute rules (figures_data_*) run grpo_repro.figure_data and write CSV under results/figures/;
plot rules (figures_plot_*) read ONLY those CSVs and draw PNG + PDF with grpo_repro.plotting
(shared style). Editing plotting code reruns plot rules only. Config: the `figures:` section (each
compute rule receives only the keys it uses, so a change reruns only what it affects).
Needs from common.smk: RESULTS, LOGS, config.
"""

from grpo_repro.figure_paths import fig2_stem as _fig2_stem, fig5_stem as _fig5_stem

FIG = f"{RESULTS}/figures"
FIG_LOGS = f"{LOGS}/figures"
_FIG_CFG = config["figures"]
_SRC = "workflow/src/grpo_repro"
_DATA_SRC = {
    "core": [f"{_SRC}/dynamics.py", f"{_SRC}/figure_data.py", f"{_SRC}/atomic_io.py"],
    "fixed_points": [f"{_SRC}/fixed_points.py"],
    "oracle": [f"{_SRC}/oracle.py", f"{_SRC}/oracle_sgd.py", f"{_SRC}/fixed_points.py"],
}
_PLOT_SRC_FIG = [f"{_SRC}/plotting/figures.py", f"{_SRC}/plotting/style.py", f"{_SRC}/figure_paths.py"]
_FIG_CATEGORY = "2. Fixed-point figures"


def _fig_cfg(*keys):
    """The `figures:` keys one compute rule uses (its params: changing another key does not rerun it)."""
    return {k: _FIG_CFG[k] for k in keys}


def _src(*groups):
    return sorted({f for g in ("core",) + groups for f in _DATA_SRC[g]})


def _pair(stem):
    return [f"{FIG}/{stem}.png", f"{FIG}/{stem}.pdf"]


def _report_png(stem, caption, sub, **labels):
    return report(f"{FIG}/{stem}.png", caption=f"../report/{caption}", category=_FIG_CATEGORY,
                  subcategory=sub, labels={"figure": stem, **labels})


def figures_data_targets():
    """CSV files written by the compute rules of stage 2."""
    names = ["fig1_weights", "fig2_h_map", "fig2_fixed_points", "fig4_B", "fig5_iterations",
             "fixed_points", "fixed_point_summary", "bifurcation", "bifurcation_fixed_points",
             "two_cycles", "variant_dynamics", "oracle_exact", "oracle_checks", "oracle_sgd",
             "oracle_sgd_prompts"]
    return [f"{FIG}/{n}.csv" for n in names]


def figures_plot_stems():
    stems = ["fig1_weights", "fig4_B", "fixed_point_map", "bifurcation", "variant_dynamics",
             "oracle_exact", "oracle_sgd"]
    stems += [_fig2_stem(e) for e in _FIG_CFG["eps"]]
    stems += [_fig5_stem(p) for p in _FIG_CFG["fig5_p0"]]
    return stems


def figures_targets():
    """Every output of stage 2: the CSVs and every figure (PNG + PDF)."""
    return figures_data_targets() + [p for s in figures_plot_stems() for p in _pair(s)]


rule figures_all:
    """Every output of stage 2 (`snakemake -c2 figures_all`)."""
    input:
        figures_targets(),


# ---------------------------------------------------------------------------------------------
# compute rules: CSV
# ---------------------------------------------------------------------------------------------
rule figures_data_fig1:
    """Fig 1 / eq. (4): w+(p), w-(p), Omega(p) without smoothing and for every figures.fig1_eps."""
    input:
        src=_src(),
    output:
        csv=f"{FIG}/fig1_weights.csv",
    params:
        kind="fig1",
        cfg=_fig_cfg("fig1_eps"),
    log:
        f"{FIG_LOGS}/figures_data_fig1.log",
    benchmark:
        f"{BENCH}/figures/figures_data_fig1.tsv",
    threads: 1
    script:
        "../scripts/figures_data.py"


rule figures_data_fig2:
    """Fig 2 / Thm 2-3: h_{eps,p_ref}(p) and every fixed point (with h'(p*) and stability)."""
    input:
        src=_src("fixed_points"),
    output:
        curves=f"{FIG}/fig2_h_map.csv",
        fixed_points=f"{FIG}/fig2_fixed_points.csv",
    params:
        kind="fig2",
        cfg=_fig_cfg("eps", "fig2_beta", "fig2_p_ref"),
    log:
        f"{FIG_LOGS}/figures_data_fig2.log",
    benchmark:
        f"{BENCH}/figures/figures_data_fig2.tsv",
    threads: 1
    script:
        "../scripts/figures_data.py"


rule figures_data_fig4:
    """Fig 4 / Thm 6, Lemma 1: the stability threshold B(p*)."""
    input:
        src=_src(),
    output:
        csv=f"{FIG}/fig4_B.csv",
    params:
        kind="fig4",
        cfg=_fig_cfg("eps_dynamics"),
    log:
        f"{FIG_LOGS}/figures_data_fig4.log",
    benchmark:
        f"{BENCH}/figures/figures_data_fig4.tsv",
    threads: 1
    script:
        "../scripts/figures_data.py"


rule figures_data_fig5:
    """Fig 5 / Thm 2: p_{n+1} = h(p_n) from p_0 = 0.1 and from p_0 = p_ref (columns beta,p_ref,eps,p0,n,p)."""
    input:
        src=_src(),
    output:
        csv=f"{FIG}/fig5_iterations.csv",
    params:
        kind="fig5",
        cfg=_fig_cfg("eps_dynamics", "n_iter", "fig5_p0", "fig5_beta", "fig5_p_ref"),
    log:
        f"{FIG_LOGS}/figures_data_fig5.log",
    benchmark:
        f"{BENCH}/figures/figures_data_fig5.tsv",
    threads: 1
    script:
        "../scripts/figures_data.py"


rule figures_data_fixed_point_map:
    """Beyond the paper (Thm 2, 3, 6): all fixed points over a (beta, p_ref) grid, and per cell the
    number of fixed points / 2-cycles and where the orbit from p_ref ends."""
    input:
        src=_src("fixed_points"),
    output:
        fixed_points=f"{FIG}/fixed_points.csv",
        summary=f"{FIG}/fixed_point_summary.csv",
    params:
        kind="fixed_point_map",
        cfg=_fig_cfg("eps", "map_beta", "map_p_ref", "map_n_grid", "bif_burn_in", "bif_keep"),
    log:
        f"{FIG_LOGS}/figures_data_fixed_point_map.log",
    benchmark:
        f"{BENCH}/figures/figures_data_fixed_point_map.tsv",
    threads: 1
    script:
        "../scripts/figures_data.py"


rule figures_data_bifurcation:
    """Beyond the paper (Thm 6): attractor after burn-in over beta, fixed points and every 2-cycle
    (incl. the paper's 'divergent' example beta=5, p_ref=0.001, eps=1e-5)."""
    input:
        src=_src("fixed_points"),
    output:
        attractor=f"{FIG}/bifurcation.csv",
        fixed_points=f"{FIG}/bifurcation_fixed_points.csv",
        two_cycles=f"{FIG}/two_cycles.csv",
    params:
        kind="bifurcation",
        cfg=_fig_cfg("eps_dynamics", "bif_beta", "bif_p_ref", "bif_burn_in", "bif_keep",
                     "two_cycle_examples"),
    log:
        f"{FIG_LOGS}/figures_data_bifurcation.log",
    benchmark:
        f"{BENCH}/figures/figures_data_bifurcation.tsv",
    threads: 1
    script:
        "../scripts/figures_data.py"


rule figures_data_variant_dynamics:
    """Thm 2, 5, 9, Sec. 5: PoS recurrences of GRPO, Mirror, Dr., Mirror Dr. and two-KL GRPO."""
    input:
        src=_src(),
    output:
        csv=f"{FIG}/variant_dynamics.csv",
    params:
        kind="variant_dynamics",
        cfg=_fig_cfg("eps_dynamics", "n_iter", "variant_beta", "variant_p_ref", "two_kl_alpha"),
    log:
        f"{FIG_LOGS}/figures_data_variant_dynamics.log",
    benchmark:
        f"{BENCH}/figures/figures_data_variant_dynamics.tsv",
    threads: 1
    script:
        "../scripts/figures_data.py"


rule figures_data_oracle_exact:
    """Thm 8, Lemma 2-3, Thm 9: exact Gibbs iterates on finite softmax policies vs the scalar
    recurrences (<= 1e-12) and vs an independent optimiser (L1 <= 1e-5); fails if a check fails."""
    input:
        src=_src("oracle"),
    output:
        iterates=f"{FIG}/oracle_exact.csv",
        checks=f"{FIG}/oracle_checks.csv",
    params:
        kind="oracle_exact",
        cfg=_fig_cfg("oracle", "two_kl_alpha"),
    log:
        f"{FIG_LOGS}/figures_data_oracle_exact.log",
    benchmark:
        f"{BENCH}/figures/figures_data_oracle_exact.tsv",
    threads: 1
    script:
        "../scripts/figures_data.py"


rule figures_data_oracle_sgd:
    """App. F, Thm 10: sample-based GRPO (G samples, smoothed whitened advantage, clipped surrogate,
    mu steps per batch) vs the exact iterates: TV gap, 2 delta* bound, effect of G, mu, clipping, KL."""
    input:
        src=_src("oracle"),
    output:
        summary=f"{FIG}/oracle_sgd.csv",
        prompts=f"{FIG}/oracle_sgd_prompts.csv",
    params:
        kind="oracle_sgd",
        cfg=_fig_cfg("oracle"),
    log:
        f"{FIG_LOGS}/figures_data_oracle_sgd.log",
    benchmark:
        f"{BENCH}/figures/figures_data_oracle_sgd.tsv",
    threads: 1
    script:
        "../scripts/figures_data.py"


# ---------------------------------------------------------------------------------------------
# plot rules: read the CSVs only, PNG + PDF
# ---------------------------------------------------------------------------------------------
rule figures_plot_fig1:
    """Fig 1: w+ and w- without smoothing (clipped at 10), and smoothed."""
    input:
        csv=rules.figures_data_fig1.output.csv,
        src=_PLOT_SRC_FIG,
    output:
        png=_report_png("fig1_weights", "figures_fig1.rst", "Fig 1 (weights)"),
        pdf=f"{FIG}/fig1_weights.pdf",
    params:
        kind="fig1",
        extra={},
    log:
        f"{FIG_LOGS}/figures_plot_fig1.log",
    benchmark:
        f"{BENCH}/figures/figures_plot_fig1.tsv",
    threads: 1
    script:
        "../scripts/figures_plot.py"


rule figures_plot_fig2:
    """Fig 2: h_{eps,p_ref}(p) vs p with y = p, fixed points marked stable/unstable; one figure per eps."""
    input:
        curves=rules.figures_data_fig2.output.curves,
        fixed_points=rules.figures_data_fig2.output.fixed_points,
        src=_PLOT_SRC_FIG,
    output:
        [_report_png(_fig2_stem(e), "figures_fig2.rst", "Fig 2 (h map)", eps=str(e))
         for e in _FIG_CFG["eps"]],
        [f"{FIG}/{_fig2_stem(e)}.pdf" for e in _FIG_CFG["eps"]],
    params:
        kind="fig2",
        extra={},
    log:
        f"{FIG_LOGS}/figures_plot_fig2.log",
    benchmark:
        f"{BENCH}/figures/figures_plot_fig2.tsv",
    threads: 1
    script:
        "../scripts/figures_plot.py"


rule figures_plot_fig4:
    """Fig 4: B(p*) vs p*."""
    input:
        csv=rules.figures_data_fig4.output.csv,
        src=_PLOT_SRC_FIG,
    output:
        png=_report_png("fig4_B", "figures_fig4.rst", "Fig 4 (stability threshold)"),
        pdf=f"{FIG}/fig4_B.pdf",
    params:
        kind="fig4",
        extra={"betas": list(_FIG_CFG["fig5_beta"])},
    log:
        f"{FIG_LOGS}/figures_plot_fig4.log",
    benchmark:
        f"{BENCH}/figures/figures_plot_fig4.tsv",
    threads: 1
    script:
        "../scripts/figures_plot.py"


rule figures_plot_fig5:
    """Fig 5: iterations from p_0 = 0.1 and from p_0 = p_ref, each panel titled with p_50."""
    input:
        csv=rules.figures_data_fig5.output.csv,
        src=_PLOT_SRC_FIG,
    output:
        [_report_png(_fig5_stem(p), "figures_fig5.rst", "Fig 5 (iterations)", p0=str(p))
         for p in _FIG_CFG["fig5_p0"]],
        [f"{FIG}/{_fig5_stem(p)}.pdf" for p in _FIG_CFG["fig5_p0"]],
    params:
        kind="fig5",
        extra={"p0_specs": list(_FIG_CFG["fig5_p0"])},
    log:
        f"{FIG_LOGS}/figures_plot_fig5.log",
    benchmark:
        f"{BENCH}/figures/figures_plot_fig5.tsv",
    threads: 1
    script:
        "../scripts/figures_plot.py"


rule figures_plot_fixed_point_map:
    """Beyond the paper: heatmaps of the number of fixed points and of the orbit from p_ref."""
    input:
        summary=rules.figures_data_fixed_point_map.output.summary,
        src=_PLOT_SRC_FIG,
    output:
        png=_report_png("fixed_point_map", "figures_fixed_points.rst", "Beyond: fixed-point map"),
        pdf=f"{FIG}/fixed_point_map.pdf",
    params:
        kind="fixed_point_map",
        extra={},
    log:
        f"{FIG_LOGS}/figures_plot_fixed_point_map.log",
    benchmark:
        f"{BENCH}/figures/figures_plot_fixed_point_map.tsv",
    threads: 1
    script:
        "../scripts/figures_plot.py"


rule figures_plot_bifurcation:
    """Beyond the paper: bifurcation diagram over beta with fixed points and 2-cycles."""
    input:
        attractor=rules.figures_data_bifurcation.output.attractor,
        fixed_points=rules.figures_data_bifurcation.output.fixed_points,
        two_cycles=rules.figures_data_bifurcation.output.two_cycles,
        src=_PLOT_SRC_FIG,
    output:
        png=_report_png("bifurcation", "figures_bifurcation.rst", "Beyond: bifurcation diagram"),
        pdf=f"{FIG}/bifurcation.pdf",
    params:
        kind="bifurcation",
        extra={},
    log:
        f"{FIG_LOGS}/figures_plot_bifurcation.log",
    benchmark:
        f"{BENCH}/figures/figures_plot_bifurcation.tsv",
    threads: 1
    script:
        "../scripts/figures_plot.py"


rule figures_plot_variant_dynamics:
    """Beyond the paper: PoS trajectories of every variant from the same p_ref."""
    input:
        csv=rules.figures_data_variant_dynamics.output.csv,
        src=_PLOT_SRC_FIG,
    output:
        png=_report_png("variant_dynamics", "figures_variant_dynamics.rst", "Beyond: variant dynamics"),
        pdf=f"{FIG}/variant_dynamics.pdf",
    params:
        kind="variant_dynamics",
        extra={},
    log:
        f"{FIG_LOGS}/figures_plot_variant_dynamics.log",
    benchmark:
        f"{BENCH}/figures/figures_plot_variant_dynamics.tsv",
    threads: 1
    script:
        "../scripts/figures_plot.py"


rule figures_plot_oracle_exact:
    """Beyond the paper: oracle errors (closed form vs scalar recurrence vs independent optimiser)."""
    input:
        iterates=rules.figures_data_oracle_exact.output.iterates,
        src=_PLOT_SRC_FIG,
    output:
        png=_report_png("oracle_exact", "figures_oracle.rst", "Beyond: finite-policy oracle"),
        pdf=f"{FIG}/oracle_exact.pdf",
    params:
        kind="oracle_exact",
        extra={},
    log:
        f"{FIG_LOGS}/figures_plot_oracle_exact.log",
    benchmark:
        f"{BENCH}/figures/figures_plot_oracle_exact.tsv",
    threads: 1
    script:
        "../scripts/figures_plot.py"


rule figures_plot_oracle_sgd:
    """Beyond the paper: sample-based GRPO vs exact iterates (Thm 10)."""
    input:
        summary=rules.figures_data_oracle_sgd.output.summary,
        prompts=rules.figures_data_oracle_sgd.output.prompts,
        src=_PLOT_SRC_FIG,
    output:
        png=_report_png("oracle_sgd", "figures_oracle.rst", "Beyond: finite-policy oracle"),
        pdf=f"{FIG}/oracle_sgd.pdf",
    params:
        kind="oracle_sgd",
        extra={},
    log:
        f"{FIG_LOGS}/figures_plot_oracle_sgd.log",
    benchmark:
        f"{BENCH}/figures/figures_plot_oracle_sgd.tsv",
    threads: 1
    script:
        "../scripts/figures_plot.py"
