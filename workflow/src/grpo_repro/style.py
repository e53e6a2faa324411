"""Shared matplotlib style of every figure of the pipeline (Fig 1-5 and the beyond-the-paper plots).

API:
    apply_style()                 Agg backend + one set of rcParams (call once per plot script)
    variant_color(v), variant_label(v), VARIANT_STYLE, K3_COLORS
                                  one colour and display name per GRPO variant (and pi_ref's,
                                  "ref"); the variant records hold none
    STABLE / UNSTABLE             marker styles of stable / unstable fixed points and cycles
    panel_grid(nrows, ncols)      figure + 2-D array of axes sized per panel
    save_figure(fig, *paths, tight=True)
                                  write PNG and PDF atomically (format from the suffix), close fig
    fmt(x)                        a number as titles and labels print it (%g)
Restyling happens here only; plot functions take their data from CSV files, so a style change
never reruns a compute step.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

from grpo_repro import variants as reg
from grpo_repro.io import atomic_path

#: pi_ref, the sharpening baseline, drawn beside the variants: black
REF_COLOR, REF_LABEL = "#000000", "pi_ref"
#: each variant's name in plots and its colour in every figure. The variant records
#: (grpo_repro.variants) say what a variant does; this, how it looks: only plots import this
#: module, so a recolour reruns plot jobs only. A variant not listed here is drawn under its name
#: in one of UNLISTED_COLORS (variant_color).
VARIANT_STYLE = {
    "grpo": ("GRPO", "#1f77b4"),  # blue
    "mirror": ("Mirror GRPO", "#d62728"),  # red
    "dr_grpo": ("Dr. GRPO", "#2ca02c"),  # green
    "mirror_dr": ("Mirror Dr. GRPO", "#ff7f0e"),  # orange
    "two_kl": ("two-KL GRPO", "#9467bd"),  # purple
    "two_kl_dr": ("two-KL Dr. GRPO", "#8c564b"),  # brown
}
#: the second colour of a variant's fixed-point runs with plain k3 (fixed_point.plots), if any
K3_COLORS = {"grpo": "#17becf", "mirror": "#ff9896"}
UNLISTED_COLORS = ("#e377c2", "#7f7f7f", "#bcbd22", "#aec7e8", "#ffbb78", "#98df8a")
#: other recurring series
SERIES_COLORS = {
    "exact": "#000000",
    "sgd": "#17becf",
    "identity": "#7f7f7f",
    "reference": "#bcbd22",
}

STABLE = dict(
    marker="o",
    markersize=6,
    markerfacecolor="#000000",
    markeredgecolor="#000000",
    linestyle="none",
    zorder=5,
)
UNSTABLE = dict(
    marker="o",
    markersize=6,
    markerfacecolor="white",
    markeredgecolor="#000000",
    linestyle="none",
    zorder=5,
)

RC = {
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "savefig.bbox": "tight",
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 1.5,
    "pdf.fonttype": 3,
    "svg.hashsalt": "grpo_repro",
}


def fmt(x: float) -> str:
    """A number as titles and labels print it: 0.2, 1e-05, 5."""
    return f"{x:g}"


def apply_style() -> None:
    """Select the non-interactive backend and the shared rcParams."""
    matplotlib.use("Agg")
    plt.rcParams.update(RC)


def variant_color(variant: str) -> str:
    """A registered variant's colour (VARIANT_STYLE; a variant not listed there: one of
    UNLISTED_COLORS, by its place among those), or pi_ref's; KeyError for an unknown name."""
    if variant == "ref":
        return REF_COLOR
    if variant in VARIANT_STYLE:
        return VARIANT_STYLE[variant][1]
    unlisted = [n for n in reg.names() if n not in VARIANT_STYLE]
    if variant not in unlisted:
        known = sorted([*reg.names(), "ref"])
        raise KeyError(f"no colour for variant {variant!r}; known: {known}")
    return UNLISTED_COLORS[unlisted.index(variant) % len(UNLISTED_COLORS)]


def variant_label(variant: str) -> str:
    """A variant's label (VARIANT_STYLE), pi_ref's, or the name itself."""
    if variant == "ref":
        return REF_LABEL
    return VARIANT_STYLE[variant][0] if variant in VARIANT_STYLE else variant


def shades(color: str, n: int, lo: float = 0.35, hi: float = 1.0) -> list:
    """n shades of one colour, light to full (e.g. the two-KL variant for several alpha)."""
    base = np.array(matplotlib.colors.to_rgb(color))
    return [tuple(1 - t * (1 - base)) for t in np.linspace(lo, hi, n)]


def panel_grid(nrows: int, ncols: int, panel: tuple[float, float] = (2.6, 2.1), **kw):
    """Figure with nrows x ncols panels; axes always a 2-D array."""
    kw.setdefault("squeeze", False)
    kw.setdefault("constrained_layout", True)
    fig, axes = plt.subplots(nrows, ncols, figsize=(panel[0] * ncols, panel[1] * nrows), **kw)
    return fig, axes


def save_figure(fig, *paths, tight: bool = True) -> None:
    """Save `fig` to every path (format from the suffix: .png, .pdf), each atomically; close it.
    tight=False keeps the figure's own margins (faster for large panel grids laid out by hand).
    PDF metadata carry no creation date, so reruns give identical files."""
    if not paths:
        raise ValueError("save_figure needs at least one path")
    try:
        for path in paths:
            fmt = Path(path).suffix.lstrip(".").lower()
            meta = (
                {"CreationDate": None}
                if fmt == "pdf"
                else {"Software": None}
                if fmt == "png"
                else None
            )
            with atomic_path(path) as tmp:
                fig.savefig(tmp, format=fmt, metadata=meta, bbox_inches="tight" if tight else None)
    finally:
        plt.close(fig)
