"""Stage figures: the paper's numerical figures and beyond (Mroueh, arXiv 2503.06639): Fig 1 (weights
w+, w-, eq. 4), Fig 2 (h_{eps,p_ref} and its fixed points, Thm 2-3), Fig 4 (B(p*), Thm 6), Fig 5
(iterations p_{n+1} = h(p_n)); beyond the paper: the fixed-point map over (beta, p_ref), a
bifurcation diagram with every 2-cycle, the PoS recurrences of every variant (Thm 2, 5, 9, Sec. 5)
a finite-policy oracle (exact Gibbs iterates, Thm 8; sample-based GRPO vs Thm 10) and the finite
group size of docs/theory.md Sec. 8 (Omega/Omega_G over p; p*_G vs p* over p_ref).

Rules are generated from grpo_repro.figures.registry.FAMILIES: per family, a compute rule
figures_data_<family> (CSV under results/figures/, params: only the `figures:` keys it reads) and a
plot rule figures_plot_<family> that reads only those CSVs (PNG + PDF). Adding a figure is one
registry entry and its two functions.
"""

from grpo_repro.figures.registry import FAMILIES, module_of

for fam in FAMILIES:

    rule:
        f"""{fam.doc} Data (CSV)."""
        name:
            f"figures_data_{fam.name}"
        input:
            code=code("figures_data.py", module_of(fam.compute)),
        output:
            **P.figure_csvs(fam),
        log:
            f"{P.logs}/figures/figures_data_{fam.name}.log",
        benchmark:
            f"{P.bench}/figures/figures_data_{fam.name}.tsv"
        conda:
            P.env
        params:
            func=fam.compute,
            cfg={k: P.fig_cfg[k] for k in fam.keys},
        script:
            "../scripts/figures_data.py"

    rule:
        f"""{fam.doc} Plot (PNG + PDF)."""
        name:
            f"figures_plot_{fam.name}"
        input:
            **{n: f"{P.fig}/{s}.csv" for n, s in fam.plot_frames().items()},
            code=code("figures_plot.py", module_of(fam.plot)),
        output:
            [report(p, **kw) if kw else p for p, kw in P.figure_files(fam)],
        log:
            f"{P.logs}/figures/figures_plot_{fam.name}.log",
        benchmark:
            f"{P.bench}/figures/figures_plot_{fam.name}.tsv"
        conda:
            P.env
        params:
            func=fam.plot,
            extra=fam.extra(P.fig_cfg),
        script:
            "../scripts/figures_plot.py"


rule figures_all:
    """Every output of the figures stage (`snakemake -c2 figures_all`)."""
    input:
        P.figures_targets(),
