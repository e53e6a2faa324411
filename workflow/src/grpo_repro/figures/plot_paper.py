"""Plots of the paper's figures: Fig 1 (w+, w-, eq. 4), Fig 2 (h map and fixed points, Thm 2-3),
Fig 4 (B(p*), Thm 6) and Fig 5 (iterations p_{n+1} = h(p_n), Thm 2).

Each function reads only CSV files written by grpo_repro.figures.compute (its `inputs`: name ->
path) and writes PNG + PDF through grpo_repro.style; restyling never recomputes data.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from grpo_repro import style
from grpo_repro.figures.registry import fig2_stem, fig5_stem
from grpo_repro.style import fmt as _fmt

#: what each smoothing eps of Fig 2 stands for (titles)
EPS_NOTES = {
    1e-5: "the value stated in the paper's caption",
    1e-2: "the value that reproduces the published curves",
}


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
    ax.set(
        xlim=(0, 1),
        ylim=(0, 10),
        xlabel="p",
        ylabel="weight (clipped at 10)",
        title=r"Fig 1: weights without smoothing ($\epsilon=0$)",
    )
    ax.legend(loc="upper center")
    ax = axes[0, 1]
    eps_vals = sorted(e for e in df.eps.unique() if e > 0)
    cols = style.shades("#444444", len(eps_vals), lo=0.35)
    ax.plot(raw.p, np.minimum(raw.w_plus, 10), color="#1f77b4", lw=0.8, alpha=0.5)
    ax.plot(raw.p, np.minimum(raw.w_minus, 10), color="#d62728", lw=0.8, alpha=0.5)
    for c, eps in zip(cols, eps_vals):
        d = df[df.eps == eps]
        ax.plot(
            d.p,
            np.minimum(d.w_plus, 10),
            color=c,
            label=rf"$\epsilon$={_fmt(eps)}: $w^+$ (solid), $w^-$ (dashed)",
        )
        ax.plot(d.p, np.minimum(d.w_minus, 10), color=c, ls="--")
    ax.set(
        xlim=(0, 1),
        ylim=(0, 10),
        xlabel="p",
        title=r"smoothed: $w^\pm=\{1-p,\,p\}/\sqrt{p(1-p)+\epsilon}$",
    )
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
        fig, axes = style.panel_grid(
            len(betas), len(p_refs), panel=(2.7, 2.5), constrained_layout=False
        )
        fig.subplots_adjust(hspace=0.35, wspace=0.25, top=0.93)
        for i, beta in enumerate(betas):
            for j, p_ref in enumerate(p_refs):
                ax = axes[i, j]
                d = c_e[(c_e.beta == beta) & (c_e.p_ref == p_ref)]
                ax.plot(
                    d.p, d.h, color=style.variant_color("grpo"), label=r"$h_{\epsilon,p_{ref}}(p)$"
                )
                ax.plot(
                    [0, 1],
                    [0, 1],
                    color=style.SERIES_COLORS["identity"],
                    ls="--",
                    lw=1,
                    label="y = p",
                )
                f = fps[(fps.eps == eps) & (fps.beta == beta) & (fps.p_ref == p_ref)]
                lines = []
                for _, r in f.iterrows():
                    ax.plot(
                        [r.p_star], [r.p_star], **(style.STABLE if r.stable else style.UNSTABLE)
                    )
                    lines.append(
                        f"p*={_p_label(r.p_star)} {'stable' if r.stable else 'unstable'}"
                        f" (h'={r.h_prime:.2g})"
                    )
                ax.text(
                    0.03,
                    0.03,
                    "\n".join(lines),
                    transform=ax.transAxes,
                    fontsize=6.5,
                    va="bottom",
                    ha="left",
                    bbox=dict(fc="white", ec="none", alpha=0.6),
                )
                ax.set(xlim=(0, 1), ylim=(0, 1.02), title=f"β={_fmt(beta)}, p_ref={_fmt(p_ref)}")
                if i == len(betas) - 1:
                    ax.set_xlabel("p")
                if j == 0:
                    ax.set_ylabel("h(p)")
        axes[0, 0].legend(loc="upper center", fontsize=7)
        fig.suptitle(
            rf"Fig 2: $h_{{\epsilon,p_{{ref}}}}(p)$ and $y=p$, $\epsilon$={_fmt(eps)}{_eps_note(eps)}; "
            "filled = stable, open = unstable fixed point"
        )
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
    fig.suptitle(
        r"local convergence (Thm 6) iff $\beta > B(p^*) = p^*(1-p^*)|2p^*-1| / (2(p^*(1-p^*)+\epsilon)^{3/2})$",
        fontsize=8,
    )
    style.save_figure(fig, *outputs)


# ------------------------------------------------------------------------------------ Fig 5
def _orbit(d: pd.DataFrame) -> str:
    """Panel title: the orbit's class (compute.fig5); p_50 is labelled as the paper's value."""
    last = d.iloc[-1]
    n = int(last.n)
    if last.orbit == "fixed_point":
        if bool(last.limit_reached_by_n_iter):
            return f"p* = {last.p_limit_a:.3g}"
        return f"→ p* = {last.p_limit_a:.3g} (not by n={n})"
    if last.orbit == "two_cycle":
        return f"2-cycle {last.p_limit_a:.3g} ↔ {last.p_limit_b:.3g}"
    return f"NOT converged; p_{n} = {last.p:.3g} (paper's 'p* ≈')"


def plot_fig5(inputs: dict, outputs: list, p0_specs=()) -> None:
    df = pd.read_csv(inputs["csv"])
    style.apply_style()
    betas, p_refs = sorted(df.beta.unique()), sorted(df.p_ref.unique())
    eps = df.eps.iloc[0]
    for spec in p0_specs:
        fig, axes = style.panel_grid(
            len(betas), len(p_refs), panel=(2.4, 1.8), constrained_layout=False
        )
        fig.subplots_adjust(hspace=0.45, wspace=0.25, top=0.93)
        for i, beta in enumerate(betas):
            for j, p_ref in enumerate(p_refs):
                ax = axes[i, j]
                d = df[(df.beta == beta) & (df.p_ref == p_ref)]
                d = d[d.p0 == p_ref] if spec == "p_ref" else d[np.isclose(d.p0, float(spec))]
                ax.plot(d.n, d.p, color=style.variant_color("grpo"), marker=".", ms=3, lw=1)
                ax.axhline(p_ref, color=style.SERIES_COLORS["reference"], lw=0.8, ls="--")
                n_last = int(d.n.max())
                ax.set(
                    ylim=(-0.02, 1.02), title=f"β={_fmt(beta)}, p_ref={_fmt(p_ref)}: " + _orbit(d)
                )
                ax.title.set_fontsize(8)
                if i == len(betas) - 1:
                    ax.set_xlabel("n")
                if j == 0:
                    ax.set_ylabel("p_n")
        start = (
            r"$p_0 = p_{ref}$ (as the text says)"
            if spec == "p_ref"
            else rf"$p_0$ = {_fmt(float(spec))} (as the published panels)"
        )
        fig.suptitle(
            rf"Fig 5: $p_{{n+1}} = h_{{\epsilon,p_{{ref}}}}(p_n)$, n = 0..{n_last}, $\epsilon$={_fmt(eps)}, "
            rf"{start}; title: class of the orbit (limit $p^*$, 2-cycle, or NOT converged: "
            rf"then $p_{{{n_last}}}$, the paper's '$p^* \approx$'); dashed: $p_{{ref}}$"
        )
        style.save_figure(fig, *_by_stem(outputs, fig5_stem(spec)), tight=False)


# ------------------------------------------------------------------------- fixed-point map
