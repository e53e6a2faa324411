"""Plots beyond the paper: the fixed-point map over (beta, p_ref) (Thm 2-3, 6), the bifurcation
diagram with every 2-cycle (Thm 6), the PoS recurrences of every variant (Thm 2, 5, 9, Sec. 5) and
the finite group size of docs/theory.md Sec. 8 (Omega/Omega_G over p; p*_G vs p* over p_ref).

Each function reads only CSV files written by grpo_repro.figures.compute and
writes PNG + PDF through grpo_repro.style; restyling never recomputes data.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from grpo_repro import style
from grpo_repro import variants as reg
from grpo_repro.style import fmt as _fmt


def _mesh(d: pd.DataFrame, col: str):
    betas, p_refs = np.sort(d.beta.unique()), np.sort(d.p_ref.unique())
    z = d.pivot(index="p_ref", columns="beta", values=col).loc[p_refs, betas].to_numpy()
    return betas, p_refs, z


def plot_fixed_point_map(inputs: dict, outputs: list) -> None:
    import matplotlib.colors as mcolors

    summ = pd.read_csv(inputs["summary"])
    style.apply_style()
    eps_vals = sorted(summ.eps.unique())
    fig, axes = style.panel_grid(len(eps_vals), 3, panel=(3.3, 2.8))
    summ = summ.copy()
    # orbit class from p_0 = p_ref: 0 converges to p < 1-1e-6, 1 converges to ~1, 2 period 2,
    # 3 period 3-8, 4 no period <= 8 and Lyapunov exponent > 0 (chaotic), 5 no period, exponent <= 0
    cls = np.where(
        summ.orbit_period == 1,
        np.where(summ.orbit_p_hi > 1 - 1e-6, 1, 0),
        np.where(
            summ.orbit_period == 2,
            2,
            np.where(summ.orbit_period > 2, 3, np.where(summ.orbit_lyapunov > 0, 4, 5)),
        ),
    )
    summ["orbit_class"] = cls
    names = [
        "fixed point < 1",
        "fixed point ~ 1",
        "2-cycle",
        "period 3-8",
        "chaotic",
        "slow / no period",
    ]
    cmap_cls = mcolors.ListedColormap(
        ["#2ca02c", "#1f77b4", "#d62728", "#ff7f0e", "#000000", "#7f7f7f"]
    )
    for i, eps in enumerate(eps_vals):
        d = summ[summ.eps == eps]
        b, p, z = _mesh(d, "n_fixed")
        ax = axes[i, 0]
        vmax = max(3, int(np.nanmax(z)))
        m = ax.pcolormesh(
            b,
            p,
            z,
            cmap=mcolors.ListedColormap(["#c6dbef", "#6baed6", "#2171b5", "#08306b"][:vmax]),
            vmin=0.5,
            vmax=vmax + 0.5,
            shading="nearest",
        )
        fig.colorbar(m, ax=ax, ticks=range(1, vmax + 1), label="fixed points")
        _, _, zc = _mesh(d, "n_stable_two_cycles")
        bb, pp = np.meshgrid(b, p)
        ax.scatter(bb[zc > 0], pp[zc > 0], s=3, color="#d62728", label="stable 2-cycle exists")
        ax.set_title(rf"number of fixed points, $\epsilon$={_fmt(eps)}")
        if i == 0:
            ax.legend(loc="upper right", fontsize=6)
        _, _, zo = _mesh(d, "orbit_class")
        ax = axes[i, 1]
        m = ax.pcolormesh(b, p, zo, cmap=cmap_cls, vmin=-0.5, vmax=5.5, shading="nearest")
        cb = fig.colorbar(m, ax=ax, ticks=range(6))
        cb.ax.set_yticklabels(names, fontsize=6)
        ax.set_title(r"orbit of $h$ from $p_0=p_{ref}$")
        _, _, zl = _mesh(d, "orbit_p_hi")
        ax = axes[i, 2]
        m = ax.pcolormesh(b, p, zl, cmap="viridis", vmin=0, vmax=1, shading="nearest")
        fig.colorbar(m, ax=ax, label=r"$\max$ of the limit set")
        ax.set_title(r"limit PoS from $p_0=p_{ref}$")
        for ax in axes[i]:
            ax.set(xscale="log", yscale="logit", xlabel=r"$\beta$", ylabel=r"$p_{ref}$")
            ax.grid(False)
    fig.suptitle(
        "GRPO map h: fixed points (all > p_ref, Thm 3) and where the iteration from p_ref ends"
    )
    style.save_figure(fig, *outputs)


# --------------------------------------------------------------------------- bifurcation
def plot_bifurcation(inputs: dict, outputs: list) -> None:
    att = pd.read_csv(inputs["attractor"])
    fps = pd.read_csv(inputs["fixed_points"])
    cyc = pd.read_csv(inputs["two_cycles"])
    style.apply_style()
    p_refs = sorted(att.p_ref.unique())
    fig, axes = style.panel_grid(
        2, len(p_refs), panel=(3.0, 2.6), gridspec_kw={"height_ratios": [2.2, 1]}
    )
    lo, hi = 1e-7, 1 - 1e-7
    for j, p_ref in enumerate(p_refs):
        ax = axes[0, j]
        f = fps[fps.p_ref == p_ref]
        for stable, kw in (
            (True, dict(color="#000000", s=2, label="stable fixed point")),
            (False, dict(color="#9e9e9e", s=2, label="unstable fixed point")),
        ):
            g = f[f.stable == stable]
            ax.scatter(g.beta, g.p_star.clip(lo, hi), marker="s", lw=0, **kw)
        c = cyc[np.isclose(cyc.p_ref, p_ref) & (cyc.source == "bifurcation_grid")]
        for stable, kw in (
            (True, dict(color="#d62728", label="stable 2-cycle")),
            (False, dict(color="#f4a6a6", label="unstable 2-cycle")),
        ):
            g = c[c.stable == stable]
            ax.scatter(
                np.r_[g.beta, g.beta],
                np.r_[g.p_a, g.p_b].clip(lo, hi),
                s=6,
                marker="x",
                lw=0.8,
                **kw,
            )
        a = att[att.p_ref == p_ref]
        ax.scatter(
            a.beta,
            a.p.clip(lo, hi),
            s=1.5,
            color=style.variant_color("grpo"),
            alpha=0.8,
            label=r"attractor from $p_0=p_{ref}$ (after burn-in)",
        )
        ex = cyc[(cyc.source == "example") & np.isclose(cyc.p_ref, p_ref)]
        for _, r in ex.iterrows():
            ax.annotate(
                f"paper's example (beta={_fmt(r.beta)}):\n2-cycle {r.p_a:.4f} <-> {r.p_b:.4f}",
                (r.beta, r.p_b),
                xytext=(0.03, 0.62),
                textcoords="axes fraction",
                fontsize=6.5,
                arrowprops=dict(arrowstyle="->", lw=0.6),
            )
        ax.axhline(
            p_ref, color=style.SERIES_COLORS["reference"], lw=0.8, ls="--", label=r"$p_{ref}$"
        )
        ax.set(
            xscale="log",
            yscale="logit",
            ylim=(lo, hi),
            title=f"p_ref={_fmt(p_ref)}, ε={_fmt(att.eps.iloc[0])}",
        )
        if j == 0:
            ax.set_ylabel("p (logit scale; 1 drawn at 1-1e-7)")
        lam = a.drop_duplicates("beta")
        ax = axes[1, j]
        ax.plot(lam.beta, lam.lyapunov.clip(lower=-3), color=style.variant_color("grpo"), lw=1)
        ax.axhline(0, color="#000000", lw=0.7)
        ax.set(xscale="log", ylim=(-3.1, 1), xlabel=r"$\beta$")
        if j == 0:
            ax.set_ylabel("Lyapunov exp.\n(clipped at -3)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), markerscale=3)
    fig.suptitle(
        "Bifurcation diagram of the GRPO PoS map h (Thm 2, 6): attractor, fixed points, 2-cycles; "
        "bottom: Lyapunov exponent of the attractor (> 0: chaotic)"
    )
    style.save_figure(fig, *outputs)


# ----------------------------------------------------------------------- variant dynamics
def plot_variant_dynamics(inputs: dict, outputs: list) -> None:
    df = pd.read_csv(inputs["csv"])
    style.apply_style()
    betas, p_refs = sorted(df.beta.unique()), sorted(df.p_ref.unique())
    fig, axes = style.panel_grid(len(betas), len(p_refs), panel=(3.0, 2.4))
    alphas = sorted(df.alpha.dropna().unique())
    # the two-KL variants in shades of the mean+std one's colour (mean-only: dotted)
    two_kl = [r for r in reg.VARIANTS if r.two_kl]
    two_kl_color = style.variant_color(reg.find("two_kl", mean_only=False).name)
    for i, beta in enumerate(betas):
        for j, p_ref in enumerate(p_refs):
            ax = axes[i, j]
            d = df[(df.beta == beta) & (df.p_ref == p_ref)]
            for v in (r.name for r in reg.VARIANTS if not r.two_kl):
                g = d[d.variant == v]
                ax.plot(g.n, g.p, color=style.variant_color(v), label=style.variant_label(v))
            for v, ls in ((r.name, ":" if r.mean_only else "-") for r in two_kl):
                for c, a in zip(style.shades(two_kl_color, len(alphas), lo=0.5), alphas):
                    g = d[(d.variant == v) & (d.alpha == a)]
                    ax.plot(
                        g.n,
                        g.p,
                        color=c,
                        ls=ls,
                        lw=1.1,
                        label=f"{style.variant_label(v)}, alpha={_fmt(a)}",
                    )
            ax.axhline(p_ref, color=style.SERIES_COLORS["reference"], lw=0.8, ls="--")
            ax.set(ylim=(-0.02, 1.02), title=f"β={_fmt(beta)}, p_ref={_fmt(p_ref)}")
            if i == len(betas) - 1:
                ax.set_xlabel("n")
            if j == 0:
                ax.set_ylabel(r"$p_n$")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", fontsize=7)
    fig.suptitle(
        r"PoS recurrences of the variants from $p_0=p_{ref}$ ($\epsilon$="
        + _fmt(df.eps.iloc[0])
        + r"; two-KL with $\Delta_R=0$, its exact value from $\pi_0=\pi_{ref}$)"
    )
    style.save_figure(fig, *outputs)


# ----------------------------------------------------------------------- finite group size
def plot_omega_group(inputs: dict, outputs: list) -> None:
    df = pd.read_csv(inputs["csv"])
    style.apply_style()
    sizes = sorted(df.G.unique())
    colors = style.shades(style.variant_color("grpo"), len(sizes), lo=0.4)
    fig, axes = style.panel_grid(1, 2, panel=(3.6, 2.8))
    first = df[sizes[0] == df.G]
    axes[0, 0].plot(first.p, first.omega, color="#000000", label=r"$\Omega$ (population, eq. 4)")
    for c, g in zip(colors, sizes):
        d = df[g == df.G]
        axes[0, 0].plot(d.p, d.omega_g, color=c, label=rf"$\Omega_G$, G={g}")
        axes[0, 1].plot(d.p, d.ratio, color=c, label=f"G={g}")
    axes[0, 0].set(yscale="log", xlabel="p", ylabel="weight", title=r"$\Omega$ and $\Omega_G$")
    axes[0, 1].axhline(1, color=style.SERIES_COLORS["reference"], lw=0.8, ls="--")
    axes[0, 1].set(yscale="log", xlabel="p", title=r"$\Omega / \Omega_G$")
    for ax in axes[0]:
        ax.legend(fontsize=6)
    fig.suptitle(
        "Groups whitened by their own mean and spread (docs/theory.md Sec. 8): expected weight "
        rf"$\Omega_G$ vs the population $\Omega$, $\epsilon$={_fmt(df.eps.iloc[0])}"
    )
    style.save_figure(fig, *outputs)


def plot_p_star_group(inputs: dict, outputs: list) -> None:
    df = pd.read_csv(inputs["csv"])
    style.apply_style()
    betas, sizes = sorted(df.beta.unique()), sorted(df.G.unique())
    fig, axes = style.panel_grid(2, len(betas), panel=(3.0, 2.6))
    for row, (mean_only, pop, fin) in enumerate(
        ((False, "p_star", "p_star_g"), (True, "p_star_dr", "p_star_dr_g"))
    ):
        v = reg.find("reference", mean_only).name  # grpo's p*, then Dr. GRPO's
        colors = style.shades(style.variant_color(v), len(sizes), lo=0.4)
        for j, beta in enumerate(betas):
            ax = axes[row, j]
            d = df[df.beta == beta]
            first = d[sizes[0] == d.G]
            ax.plot(first.p_ref, first[pop], color="#000000", label="population (G = inf)")
            for c, g in zip(colors, sizes):
                e = d[g == d.G]
                ax.plot(e.p_ref, e[fin], color=c, label=f"G={g}")
            ax.plot([0, 1], [0, 1], color=style.SERIES_COLORS["reference"], lw=0.8, ls="--")
            name = style.variant_label(v)
            ax.set(xlim=(0, 1), ylim=(0, 1.01), title=f"{name}, β={_fmt(beta)}")
            ax.set_xlabel(r"$p_{ref}$")
            if j == 0:
                ax.set_ylabel(r"$p^*$ reached from $p_{ref}$")
                ax.legend(fontsize=6, loc="lower right")
    fig.suptitle(
        r"Fixed point reached from $p_{ref}$: $p^*_G$ of $h_G$ (own-group whitening) vs $p^*$ of h; "
        r"Dr. GRPO: logit $p^*_G$ = logit $p_{ref}$ + (1 - 1/G)/$\beta$ ($\epsilon$="
        + _fmt(df.eps.iloc[0])
        + ")"
    )
    style.save_figure(fig, *outputs)
