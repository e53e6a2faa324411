"""Plots of the figures stage: Fig 1 (w+, w-), Fig 2 (h map and fixed points), Fig 4 (B(p*)),
Fig 5 (iterations) and beyond the paper (fixed-point map, bifurcation diagram with 2-cycles,
variant dynamics, finite-policy oracle: exact closed form and sample-based GRPO vs Thm 10).

Each function reads only CSV files written by grpo_repro.figure_data (its `inputs`: name -> path)
and writes PNG + PDF through grpo_repro.plotting.style; restyling never recomputes data.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from grpo_repro.figure_paths import fig2_stem, fig5_stem
from grpo_repro.plotting import style

#: what each smoothing eps of Fig 2 stands for (titles)
EPS_NOTES = {
    1e-5: "the value stated in the paper's caption",
    1e-2: "the value that reproduces the published curves",
}


def _fmt(x: float) -> str:
    return f"{x:g}"


def _eps_note(eps: float) -> str:
    for k, note in EPS_NOTES.items():
        if np.isclose(eps, k, rtol=1e-9, atol=0):
            return f" ({note})"
    return ""


def _by_stem(outputs, stem: str) -> list[str]:
    paths = [o for o in outputs if Path(o).stem == stem]
    if not paths:
        raise ValueError(f"no output named {stem}.* among {list(outputs)}")
    return paths


def _p_label(p: float) -> str:
    if p >= 1 - 1e-12:
        return "1"
    if p > 0.999:
        return f"1-{1 - p:.1e}"
    return f"{p:.4g}"


# ------------------------------------------------------------------------------------ Fig 1
def plot_fig1(inputs: dict, outputs: list) -> None:
    df = pd.read_csv(inputs["csv"])
    style.apply_style()
    fig, axes = style.panel_grid(1, 2, panel=(3.6, 2.8))
    ax = axes[0, 0]
    raw = df[df.eps == 0]
    ax.plot(raw.p, np.minimum(raw.w_plus, 10), color="#1f77b4", label=r"$w^+(p)=\sqrt{(1-p)/p}$")
    ax.plot(raw.p, np.minimum(raw.w_minus, 10), color="#d62728", label=r"$w^-(p)=\sqrt{p/(1-p)}$")
    ax.set(xlim=(0, 1), ylim=(0, 10), xlabel="p", ylabel="weight (clipped at 10)",
           title=r"Fig 1: weights without smoothing ($\epsilon=0$)")
    ax.legend(loc="upper center")
    ax = axes[0, 1]
    eps_vals = sorted(e for e in df.eps.unique() if e > 0)
    cols = style.shades("#444444", len(eps_vals), lo=0.35)
    ax.plot(raw.p, np.minimum(raw.w_plus, 10), color="#1f77b4", lw=0.8, alpha=0.5)
    ax.plot(raw.p, np.minimum(raw.w_minus, 10), color="#d62728", lw=0.8, alpha=0.5)
    for c, eps in zip(cols, eps_vals):
        d = df[df.eps == eps]
        ax.plot(d.p, np.minimum(d.w_plus, 10), color=c, label=rf"$\epsilon$={_fmt(eps)}: $w^+$ (solid), $w^-$ (dashed)")
        ax.plot(d.p, np.minimum(d.w_minus, 10), color=c, ls="--")
    ax.set(xlim=(0, 1), ylim=(0, 10), xlabel="p",
           title=r"smoothed: $w^\pm=\{1-p,\,p\}/\sqrt{p(1-p)+\epsilon}$")
    ax.legend(loc="upper center", fontsize=7)
    style.save_figure(fig, *outputs)


# ------------------------------------------------------------------------------------ Fig 2
def plot_fig2(inputs: dict, outputs: list) -> None:
    curves = pd.read_csv(inputs["curves"])
    fps = pd.read_csv(inputs["fixed_points"])
    style.apply_style()
    for eps in sorted(curves.eps.unique()):
        c_e = curves[curves.eps == eps]
        betas, p_refs = sorted(c_e.beta.unique()), sorted(c_e.p_ref.unique())
        fig, axes = style.panel_grid(len(betas), len(p_refs), panel=(2.7, 2.5), constrained_layout=False)
        fig.subplots_adjust(hspace=0.35, wspace=0.25, top=0.93)
        for i, beta in enumerate(betas):
            for j, p_ref in enumerate(p_refs):
                ax = axes[i, j]
                d = c_e[(c_e.beta == beta) & (c_e.p_ref == p_ref)]
                ax.plot(d.p, d.h, color=style.variant_color("grpo"), label=r"$h_{\epsilon,p_{ref}}(p)$")
                ax.plot([0, 1], [0, 1], color=style.SERIES_COLORS["identity"], ls="--", lw=1, label="y = p")
                f = fps[(fps.eps == eps) & (fps.beta == beta) & (fps.p_ref == p_ref)]
                lines = []
                for _, r in f.iterrows():
                    ax.plot([r.p_star], [r.p_star], **(style.STABLE if r.stable else style.UNSTABLE))
                    lines.append(f"p*={_p_label(r.p_star)} {'stable' if r.stable else 'unstable'}"
                                 f" (h'={r.h_prime:.2g})")
                ax.text(0.03, 0.03, "\n".join(lines), transform=ax.transAxes, fontsize=6.5,
                        va="bottom", ha="left", bbox=dict(fc="white", ec="none", alpha=0.6))
                ax.set(xlim=(0, 1), ylim=(0, 1.02), title=f"β={_fmt(beta)}, p_ref={_fmt(p_ref)}")
                if i == len(betas) - 1:
                    ax.set_xlabel("p")
                if j == 0:
                    ax.set_ylabel("h(p)")
        axes[0, 0].legend(loc="upper center", fontsize=7)
        fig.suptitle(rf"Fig 2: $h_{{\epsilon,p_{{ref}}}}(p)$ and $y=p$, $\epsilon$={_fmt(eps)}{_eps_note(eps)}; "
                     "filled = stable, open = unstable fixed point")
        style.save_figure(fig, *_by_stem(outputs, fig2_stem(eps)), tight=False)


# ------------------------------------------------------------------------------------ Fig 4
def plot_fig4(inputs: dict, outputs: list, betas=()) -> None:
    df = pd.read_csv(inputs["csv"])
    eps = df.eps.iloc[0]
    style.apply_style()
    fig, axes = style.panel_grid(1, 2, panel=(3.6, 2.8))
    for ax, log in zip(axes[0], (False, True)):
        ax.plot(df.p_star, df.B, color=style.variant_color("grpo"))
        for b in betas:
            ax.axhline(b, color=style.SERIES_COLORS["identity"], lw=0.7, ls=":")
        ax.set(xlim=(0, 1), xlabel=r"$p^*$", ylabel=r"$B(p^*)$")
        if log:
            ax.set_yscale("log")
            ax.set_ylim(1e-3, df.B.max() * 2)
            ax.set_title(r"log scale; dotted: $\beta$ of Fig 5")
        else:
            ax.set_ylim(0, 5)
            ax.set_title(rf"Fig 4: $B(p^*)$, $\epsilon$={_fmt(eps)} (clipped at 5)")
    fig.suptitle(r"local convergence (Thm 6) iff $\beta > B(p^*) = p^*(1-p^*)|2p^*-1| / (2(p^*(1-p^*)+\epsilon)^{3/2})$",
                 fontsize=8)
    style.save_figure(fig, *outputs)


# ------------------------------------------------------------------------------------ Fig 5
def plot_fig5(inputs: dict, outputs: list, p0_specs=()) -> None:
    df = pd.read_csv(inputs["csv"])
    style.apply_style()
    betas, p_refs = sorted(df.beta.unique()), sorted(df.p_ref.unique())
    eps = df.eps.iloc[0]
    for spec in p0_specs:
        fig, axes = style.panel_grid(len(betas), len(p_refs), panel=(2.4, 1.8), constrained_layout=False)
        fig.subplots_adjust(hspace=0.45, wspace=0.25, top=0.93)
        for i, beta in enumerate(betas):
            for j, p_ref in enumerate(p_refs):
                ax = axes[i, j]
                d = df[(df.beta == beta) & (df.p_ref == p_ref)]
                d = d[d.p0 == p_ref] if spec == "p_ref" else d[np.isclose(d.p0, float(spec))]
                ax.plot(d.n, d.p, color=style.variant_color("grpo"), marker=".", ms=3, lw=1)
                ax.axhline(p_ref, color=style.SERIES_COLORS["reference"], lw=0.8, ls="--")
                n_last = int(d.n.max())
                ax.set(ylim=(-0.02, 1.02),
                       title=f"β={_fmt(beta)}, p_ref={_fmt(p_ref)}: p* ≈ {d.p.iloc[-1]:.3g}")
                ax.title.set_fontsize(8)
                if i == len(betas) - 1:
                    ax.set_xlabel("n")
                if j == 0:
                    ax.set_ylabel("p_n")
        start = r"$p_0 = p_{ref}$ (as the text says)" if spec == "p_ref" else rf"$p_0$ = {_fmt(float(spec))} (as the published panels)"
        fig.suptitle(rf"Fig 5: $p_{{n+1}} = h_{{\epsilon,p_{{ref}}}}(p_n)$, n = 0..{n_last}, $\epsilon$={_fmt(eps)}, "
                     rf"{start}; title: $p^* \approx p_{{{n_last}}}$; dashed: $p_{{ref}}$")
        style.save_figure(fig, *_by_stem(outputs, fig5_stem(spec)), tight=False)


# ------------------------------------------------------------------------- fixed-point map
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
    cls = np.where(summ.orbit_period == 1, np.where(summ.orbit_p_hi > 1 - 1e-6, 1, 0),
                   np.where(summ.orbit_period == 2, 2, np.where(summ.orbit_period > 2, 3,
                                                                np.where(summ.orbit_lyapunov > 0, 4, 5))))
    summ["orbit_class"] = cls
    names = ["fixed point < 1", "fixed point ~ 1", "2-cycle", "period 3-8", "chaotic", "slow / no period"]
    cmap_cls = mcolors.ListedColormap(["#2ca02c", "#1f77b4", "#d62728", "#ff7f0e", "#000000", "#7f7f7f"])
    for i, eps in enumerate(eps_vals):
        d = summ[summ.eps == eps]
        b, p, z = _mesh(d, "n_fixed")
        ax = axes[i, 0]
        vmax = max(3, int(np.nanmax(z)))
        m = ax.pcolormesh(b, p, z, cmap=mcolors.ListedColormap(["#c6dbef", "#6baed6", "#2171b5", "#08306b"][:vmax]),
                          vmin=0.5, vmax=vmax + 0.5, shading="nearest")
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
    fig.suptitle("GRPO map h: fixed points (all > p_ref, Thm 3) and where the iteration from p_ref ends")
    style.save_figure(fig, *outputs)


# --------------------------------------------------------------------------- bifurcation
def plot_bifurcation(inputs: dict, outputs: list) -> None:
    att = pd.read_csv(inputs["attractor"])
    fps = pd.read_csv(inputs["fixed_points"])
    cyc = pd.read_csv(inputs["two_cycles"])
    style.apply_style()
    p_refs = sorted(att.p_ref.unique())
    fig, axes = style.panel_grid(2, len(p_refs), panel=(3.0, 2.6),
                                 gridspec_kw={"height_ratios": [2.2, 1]})
    lo, hi = 1e-7, 1 - 1e-7
    for j, p_ref in enumerate(p_refs):
        ax = axes[0, j]
        f = fps[fps.p_ref == p_ref]
        for stable, kw in ((True, dict(color="#000000", s=2, label="stable fixed point")),
                           (False, dict(color="#9e9e9e", s=2, label="unstable fixed point"))):
            g = f[f.stable == stable]
            ax.scatter(g.beta, g.p_star.clip(lo, hi), marker="s", lw=0, **kw)
        c = cyc[np.isclose(cyc.p_ref, p_ref) & (cyc.source == "bifurcation_grid")]
        for stable, kw in ((True, dict(color="#d62728", label="stable 2-cycle")),
                           (False, dict(color="#f4a6a6", label="unstable 2-cycle"))):
            g = c[c.stable == stable]
            ax.scatter(np.r_[g.beta, g.beta], np.r_[g.p_a, g.p_b].clip(lo, hi), s=6, marker="x", lw=0.8, **kw)
        a = att[att.p_ref == p_ref]
        ax.scatter(a.beta, a.p.clip(lo, hi), s=1.5, color=style.variant_color("grpo"), alpha=0.8,
                   label=r"attractor from $p_0=p_{ref}$ (after burn-in)")
        ex = cyc[(cyc.source == "example") & np.isclose(cyc.p_ref, p_ref)]
        for _, r in ex.iterrows():
            ax.annotate(f"paper's example (beta={_fmt(r.beta)}):\n2-cycle {r.p_a:.4f} <-> {r.p_b:.4f}",
                        (r.beta, r.p_b), xytext=(0.03, 0.62), textcoords="axes fraction", fontsize=6.5,
                        arrowprops=dict(arrowstyle="->", lw=0.6))
        ax.axhline(p_ref, color=style.SERIES_COLORS["reference"], lw=0.8, ls="--", label=r"$p_{ref}$")
        ax.set(xscale="log", yscale="logit", ylim=(lo, hi),
               title=f"p_ref={_fmt(p_ref)}, ε={_fmt(att.eps.iloc[0])}")
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
    fig.suptitle("Bifurcation diagram of the GRPO PoS map h (Thm 2, 6): attractor, fixed points, 2-cycles; "
                 "bottom: Lyapunov exponent of the attractor (> 0: chaotic)")
    style.save_figure(fig, *outputs)


# ----------------------------------------------------------------------- variant dynamics
def plot_variant_dynamics(inputs: dict, outputs: list) -> None:
    df = pd.read_csv(inputs["csv"])
    style.apply_style()
    betas, p_refs = sorted(df.beta.unique()), sorted(df.p_ref.unique())
    fig, axes = style.panel_grid(len(betas), len(p_refs), panel=(3.0, 2.4))
    alphas = sorted(df.alpha.dropna().unique())
    for i, beta in enumerate(betas):
        for j, p_ref in enumerate(p_refs):
            ax = axes[i, j]
            d = df[(df.beta == beta) & (df.p_ref == p_ref)]
            for v in ("grpo", "mirror", "dr_grpo", "mirror_dr"):
                g = d[d.variant == v]
                ax.plot(g.n, g.p, color=style.variant_color(v), label=style.variant_label(v))
            for v, ls in (("two_kl", "-"), ("two_kl_dr", ":")):
                for c, a in zip(style.shades(style.variant_color("two_kl"), len(alphas), lo=0.5), alphas):
                    g = d[(d.variant == v) & (d.alpha == a)]
                    ax.plot(g.n, g.p, color=c, ls=ls, lw=1.1,
                            label=f"{style.variant_label(v)}, alpha={_fmt(a)}")
            ax.axhline(p_ref, color=style.SERIES_COLORS["reference"], lw=0.8, ls="--")
            ax.set(ylim=(-0.02, 1.02), title=f"β={_fmt(beta)}, p_ref={_fmt(p_ref)}")
            if i == len(betas) - 1:
                ax.set_xlabel("n")
            if j == 0:
                ax.set_ylabel(r"$p_n$")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside right center", fontsize=7)
    fig.suptitle(r"PoS recurrences of the variants from $p_0=p_{ref}$ ($\epsilon$=" + _fmt(df.eps.iloc[0])
                 + r"; two-KL with $\Delta_R=0$, its exact value from $\pi_0=\pi_{ref}$)")
    style.save_figure(fig, *outputs)


# ------------------------------------------------------------------------------- oracle
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
            axes[0, 0].plot(e.index, e.values, color=color, ls=ls, lw=1,
                            label=f"{run}" if init == "ref" else None)
            o = h.groupby("n").l1_optimiser.max().dropna().clip(lower=floor)
            axes[0, 1].plot(o.index, o.values, color=color, ls=ls, lw=1)
            if v.startswith("two_kl") and init == "perturbed":
                dr = h[h.kind == "random"].groupby("n").delta_r.apply(lambda s: s.abs().max()).dropna()
                axes[0, 2].plot(dr.index, dr.clip(lower=floor).values, color=color, lw=1, label=run)
    axes[0, 0].axhline(1e-12, color="k", lw=0.8, ls=":")
    axes[0, 1].axhline(1e-5, color="k", lw=0.8, ls=":")
    axes[0, 0].set(yscale="log", xlabel="n", ylabel="max over prompts",
                   title=r"|PoS of Gibbs $\pi_n$ - scalar recurrence|")
    axes[0, 1].set(yscale="log", xlabel="n", title=r"L1(optimiser $\pi_n$, closed form)")
    axes[0, 2].set(yscale="log", xlabel="n", title=r"two-KL: max $|\Delta_R|$ from perturbed $\pi_0$")
    axes[0, 0].legend(fontsize=6, ncol=1, loc="upper left")
    axes[0, 2].legend(fontsize=6)
    fig.suptitle("Finite-policy oracle: exact iterations (solid: pi_0 = pi_ref, dashed: perturbed pi_0); "
                 "dotted: tolerances 1e-12 and 1e-5")
    style.save_figure(fig, *outputs)


def plot_oracle_sgd(inputs: dict, outputs: list) -> None:
    s = pd.read_csv(inputs["summary"])
    pr = pd.read_csv(inputs["prompts"])
    style.apply_style()
    fig, axes = style.panel_grid(2, 3, panel=(3.3, 2.6))
    base = s[s.factor == "baseline"]

    def band(ax, d, col, color, label, ls="-"):
        g = d.groupby("n")[col]
        m = g.mean()
        ax.plot(m.index, m.values, color=color, ls=ls, label=label)
        ax.fill_between(m.index, g.min().values, g.max().values, color=color, alpha=0.15, lw=0)

    b0 = base.iloc[0]
    desc = (f"baseline G={b0.G}, mu={b0.mu}, lr={_fmt(b0.lr)}, "
            f"clip={'none' if pd.isna(b0.clip_eps) else _fmt(b0.clip_eps)}, KL {b0.kl}, {b0.optimizer}")
    for ax, factor, col, fmt in ((axes[0, 0], "group_size", "G", "G={}"), (axes[0, 1], "mu", "mu", "mu={}")):
        d = pd.concat([base, s[s.factor == factor]])
        vals = sorted(d[col].unique())
        for c, v in zip(style.shades(style.SERIES_COLORS["sgd"], len(vals), lo=0.3), vals):
            band(ax, d[d[col] == v], "mean_tv", c, fmt.format(v))
        ax.set(xlabel="n (batch)", ylabel=r"mean TV($\tilde\pi_n, \pi_n$)", title=f"effect of {fmt.split('=')[0]}")
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
    band(ax, base, "mean_gap", style.SERIES_COLORS["sgd"], r"mean $|\tilde p_n - p_n|$")
    band(ax, base, "mean_tv", "#000000", r"mean TV$_n$")
    band(ax, base, "mean_bound", "#d62728", r"Thm 10 bound $2\delta^*_n$", ls="--")
    band(ax, base, "mean_gap_to_pstar", "#ff7f0e", r"mean $|\tilde p_n - p^*|$")
    ax.set(xlabel="n (batch)", title=r"baseline vs Thm 10 ($|\tilde p_n - p_n| \leq$ TV$_n \leq \delta^*_n$)")
    ax.legend(fontsize=6)
    ax = axes[1, 1]
    d = pd.concat([base, s[s.factor == "group_size"]])
    last = d[d.n >= d.n.max() - 4].groupby(["G", "seed"]).agg(gap=("mean_gap_to_pstar", "mean"),
                                                              deg=("frac_degenerate", "mean"),
                                                              bound=("mean_bound", "last")).groupby("G").mean()
    ax.plot(last.index, last.gap, marker="o", color=style.SERIES_COLORS["sgd"], label=r"$|\tilde p_n - p^*|$ (last 5)")
    ax.plot(last.index, last.bound, marker="s", color="#d62728", ls="--", label=r"$2\delta^*$")
    ax.plot(last.index, last.deg, marker="^", color="#7f7f7f", label="degenerate groups")
    ax.set(xscale="log", yscale="log", xlabel="G", title="group size: signal and gap")
    ax.legend(fontsize=6)
    ax = axes[1, 2]
    rnd = pr[pr.kind == "random"]
    ids = rnd.drop_duplicates("prompt").sort_values("p_ref").prompt.to_numpy()
    pick = list(ids[np.linspace(0, len(ids) - 1, 5).round().astype(int)]) + list(pr[pr.kind == "zero"].prompt.unique())
    cols = [f"C{k}" for k in range(len(pick))]
    for c, q in zip(cols, pick):
        g = pr[pr.prompt == q]
        ax.plot(g.n, g.p_exact, color=c, lw=1.2, ls="--")
        ax.plot(g.n, g.p_sgd, color=c, marker=".", ms=3, lw=0.8, label=f"p_ref={g.p_ref.iloc[0]:.3f}")
    ax.set(xlabel="n (batch)", ylabel="PoS", ylim=(-0.02, 1.02),
           title="prompts: exact (dashed) vs sample-based (dots)")
    ax.legend(fontsize=6)
    fig.suptitle(f"Sample-based GRPO on softmax policies vs exact iterates ({desc}; band: min-max over seeds)")
    style.save_figure(fig, *outputs)


PLOTS = {
    "fig1": plot_fig1,
    "fig2": plot_fig2,
    "fig4": plot_fig4,
    "fig5": plot_fig5,
    "fixed_point_map": plot_fixed_point_map,
    "bifurcation": plot_bifurcation,
    "variant_dynamics": plot_variant_dynamics,
    "oracle_exact": plot_oracle_exact,
    "oracle_sgd": plot_oracle_sgd,
}
