"""Plots of the finite-policy oracle (beyond the paper): exact Gibbs iterates against the scalar
recurrences and an independent optimiser (Thm 8, Lemma 2-3, Thm 9), and sample-based GRPO against
the exact iterates (App. F, Thm 10).

Each function reads only CSV files written by grpo_repro.figures.compute_oracle and
writes PNG + PDF through grpo_repro.style; restyling never recomputes data.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from grpo_repro import style
from grpo_repro import variants as reg
from grpo_repro.style import fmt as _fmt


def plot_oracle_exact(inputs: dict, outputs: list) -> None:
    it = pd.read_csv(inputs["iterates"])
    style.apply_style()
    fig, axes = style.panel_grid(1, 3, panel=(3.4, 2.7))
    floor = 1e-18
    it = it.copy()
    it["run"] = it.variant + np.where(it.alpha.notna(), " a=" + it.alpha.astype(str), "")
    for run, g in it.groupby("run", sort=False):
        v = g.variant.iloc[0]
        color = style.variant_color(v)
        for init, ls in (("ref", "-"), ("perturbed", "--")):
            h = g[g.init == init]
            e = h.groupby("n").abs_err.max().clip(lower=floor)
            axes[0, 0].plot(
                e.index,
                e.values,
                color=color,
                ls=ls,
                lw=1,
                label=f"{run}" if init == "ref" else None,
            )
            o = h.groupby("n").l1_optimiser.max().dropna().clip(lower=floor)
            axes[0, 1].plot(o.index, o.values, color=color, ls=ls, lw=1)
            if reg.get(v).two_kl and init == "perturbed":
                dr = (
                    h[h.kind == "random"]
                    .groupby("n")
                    .delta_r.apply(lambda s: s.abs().max())
                    .dropna()
                )
                axes[0, 2].plot(dr.index, dr.clip(lower=floor).values, color=color, lw=1, label=run)
    axes[0, 0].axhline(1e-12, color="k", lw=0.8, ls=":")
    axes[0, 1].axhline(1e-5, color="k", lw=0.8, ls=":")
    axes[0, 0].set(
        yscale="log",
        xlabel="n",
        ylabel="max over prompts",
        title=r"|PoS of Gibbs $\pi_n$ - scalar recurrence|",
    )
    axes[0, 1].set(yscale="log", xlabel="n", title=r"L1(optimiser $\pi_n$, closed form)")
    axes[0, 2].set(
        yscale="log", xlabel="n", title=r"two-KL: max $|\Delta_R|$ from perturbed $\pi_0$"
    )
    axes[0, 0].legend(fontsize=6, ncol=1, loc="upper left")
    axes[0, 2].legend(fontsize=6)
    fig.suptitle(
        "Finite-policy oracle: exact iterations (solid: pi_0 = pi_ref, dashed: perturbed pi_0); "
        "dotted: tolerances 1e-12 and 1e-5"
    )
    style.save_figure(fig, *outputs)


def plot_oracle_sgd(inputs: dict, outputs: list) -> None:
    s = pd.read_csv(inputs["summary"])
    pr = pd.read_csv(inputs["prompts"])
    thm = pd.read_csv(inputs["thm10"])
    style.apply_style()
    fig, axes = style.panel_grid(2, 3, panel=(3.3, 2.6))
    base = s[s.factor == "baseline"]

    def band(ax, d, col, color, label, ls="-"):
        g = d.groupby("n")[col]
        m = g.mean()
        ax.plot(m.index, m.values, color=color, ls=ls, label=label)
        ax.fill_between(m.index, g.min().values, g.max().values, color=color, alpha=0.15, lw=0)

    b0 = base.iloc[0]
    desc = (
        f"baseline G={b0.G}, mu={b0.mu}, lr={_fmt(b0.lr)}, "
        f"clip={'none' if pd.isna(b0.clip_eps) else _fmt(b0.clip_eps)}, KL {b0.kl}, {b0.optimizer}"
    )
    for ax, factor, col, fmt in (
        (axes[0, 0], "group_size", "G", "G={}"),
        (axes[0, 1], "mu", "mu", "mu={}"),
    ):
        d = pd.concat([base, s[s.factor == factor]])
        vals = sorted(d[col].unique())
        for c, v in zip(style.shades(style.SERIES_COLORS["sgd"], len(vals), lo=0.3), vals):
            band(ax, d[d[col] == v], "mean_tv", c, fmt.format(v))
        ax.set(
            xlabel="n (batch)",
            ylabel=r"mean TV($\tilde\pi_n, \pi_n$)",
            title=f"effect of {fmt.split('=')[0]}",
        )
        ax.legend(fontsize=6)
    ax = axes[0, 2]
    band(ax, base, "mean_tv", "#000000", "baseline")
    for factor, color in (("clip_eps", "#d62728"), ("kl", "#9467bd")):
        for key, d in s[s.factor == factor].groupby(["clip_eps", "kl"], dropna=False):
            clip = "none" if pd.isna(key[0]) else _fmt(key[0])
            band(ax, d, "mean_tv", color, f"clip={clip}, KL {key[1]}")
    ax.set(xlabel="n (batch)", title="effect of clipping and of TRL's k3 KL")
    ax.legend(fontsize=6)
    ax = axes[1, 0]
    tb = thm[thm.factor == "baseline"]
    holds, ge1 = tb.assumption_holds.mean(), (tb.delta_star >= 1).mean()
    applies = tb[tb.bound_applies.astype(bool)]
    band(ax, base, "mean_gap", style.SERIES_COLORS["sgd"], r"mean $|\tilde p_n - p_n|$")
    band(ax, base, "mean_tv", "#000000", r"mean TV$_n$")
    band(ax, base, "mean_gap_to_pstar", "#ff7f0e", r"mean $|\tilde p_n - p^*|$")
    band(ax, base, "mean_delta_star", "#7f7f7f", r"mean $\delta^*_n$ (all prompts)", ls=":")
    if base.mean_bound_valid.notna().any():  # the bound only where the assumption holds
        band(
            ax,
            base[base.mean_bound_valid.notna()],
            "mean_bound_valid",
            "#d62728",
            r"$2\delta^*_n$, prompts where the assumption holds",
            ls="--",
        )
    ax.set(
        xlabel="n (batch)",
        title=f"Thm 10: assumption holds for {holds:.0%} of prompts x seeds,\n"
        f"$\\delta^* \\geq 1$ for {ge1:.0%}; bound holds on "
        f"{applies.conclusion_holds.mean() if len(applies) else float('nan'):.0%} of those",
    )
    ax.title.set_fontsize(7)
    ax.legend(fontsize=6)
    ax = axes[1, 1]
    d = pd.concat([base, s[s.factor == "group_size"]])
    last = (
        d[d.n >= d.n.max() - 4]
        .groupby(["G", "seed"])
        .agg(
            gap=("mean_gap_to_pstar", "mean"),
            deg=("frac_degenerate", "mean"),
            bound=("mean_bound_valid", "last"),
            share=("share_assumption_holds", "last"),
        )
        .groupby("G")
        .mean()
    )
    ax.plot(
        last.index,
        last.gap,
        marker="o",
        color=style.SERIES_COLORS["sgd"],
        label=r"$|\tilde p_n - p^*|$ (last 5)",
    )
    ok = last.bound.notna()
    if ok.any():
        ax.plot(
            last.index[ok],
            last.bound[ok],
            marker="s",
            color="#d62728",
            ls="--",
            label=r"$2\delta^*$ where the assumption holds",
        )
    ax.plot(last.index, last.share, marker="v", color="#2ca02c", label="share: assumption holds")
    ax.plot(last.index, last.deg, marker="^", color="#7f7f7f", label="degenerate groups")
    ax.set(xscale="log", yscale="log", xlabel="G", title="group size: signal, gap, assumption")
    ax.legend(fontsize=6)
    ax = axes[1, 2]
    rnd = pr[pr.kind == "random"]
    ids = rnd.drop_duplicates("prompt").sort_values("p_ref").prompt.to_numpy()
    pick = list(ids[np.linspace(0, len(ids) - 1, 5).round().astype(int)]) + list(
        pr[pr.kind == "zero"].prompt.unique()
    )
    cols = [f"C{k}" for k in range(len(pick))]
    for c, q in zip(cols, pick):
        g = pr[pr.prompt == q]
        ax.plot(g.n, g.p_exact, color=c, lw=1.2, ls="--")
        ax.plot(
            g.n, g.p_sgd, color=c, marker=".", ms=3, lw=0.8, label=f"p_ref={g.p_ref.iloc[0]:.3f}"
        )
    ax.set(
        xlabel="n (batch)",
        ylabel="PoS",
        ylim=(-0.02, 1.02),
        title="prompts: exact (dashed) vs sample-based (dots)",
    )
    ax.legend(fontsize=6)
    fig.suptitle(
        f"Sample-based GRPO on softmax policies vs exact iterates ({desc}; band: min-max over "
        "seeds)\nThm 10 with delta_n = one-step error TV(pi~_n, T pi~_(n-1)); no bound drawn "
        "where its assumption (step condition and delta* < 1) fails"
    )
    style.save_figure(fig, *outputs)
