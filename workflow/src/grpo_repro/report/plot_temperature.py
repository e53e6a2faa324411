"""Figures of amplification against sharpening (Thm 1 vs a lower temperature), drawn only from
results/report/data/temperature_curve.csv and pass_at_k.csv (grpo_repro.report.temperature):

* `temperature_curves`: mean success against the sampling temperature (greedy at 0), pi_ref and
  every variant's final checkpoint, 95% intervals; one row per split, one column per problem
  class (all prompts; for the organism, the misconception class and the other problems);
* `pass_at_k_curves`: unbiased pass@k against k (log scale), one panel per temperature, on the
  headline split.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import pandas as pd

from grpo_repro import style
from grpo_repro.runs import REF

CLASS_TITLE = {
    "all": "all prompts",
    "misconception": "misconception class (pi_ref's likely step wrong)",
    "other": "other problems",
}


def _bands(ax, curve: pd.DataFrame, variants, x: str, **kw) -> None:
    """pi_ref (dashed) and each variant present: its mean against `x` and its 95% band."""
    for v in [REF] + [v for v in variants if v in set(curve["variant"])]:
        g = curve[curve["variant"] == v].sort_values(x)
        col, ls = style.variant_color(v), "--" if v == REF else "-"
        ax.plot(g[x], g["mean"], ls, color=col, label=style.variant_label(v), **kw)
        ax.fill_between(g[x], g["low"], g["high"], color=col, alpha=0.15, lw=0)


def temperature_curves(curve: pd.DataFrame, variants, *paths: str) -> None:
    style.apply_style()
    curve = curve[curve["seed"].astype(str) == "all"]
    splits = list(dict.fromkeys(curve["split"]))
    classes = [k for k in CLASS_TITLE if k in set(curve["klass"])]
    fig, axes = style.panel_grid(len(splits), len(classes), panel=(3.6, 3.0), sharey=True)
    for i, split in enumerate(splits):
        for j, klass in enumerate(classes):
            ax = axes[i, j]
            c = curve[(curve["split"] == split) & (curve["klass"] == klass)]
            _bands(ax, c, variants, "temperature", marker="o", ms=3)
            n = int(c["n_prompts"].max()) if len(c) else 0
            ax.set_title(f"{split}: {CLASS_TITLE[klass]} (n={n})", fontsize="small")
            ax.set_xlabel("sampling temperature (0 = greedy)")
        axes[i, 0].set_ylabel("mean success (95% CI)")
    axes[0, -1].legend(fontsize="small")
    style.save_figure(fig, *paths)


def pass_at_k_curves(pk: pd.DataFrame, variants, split: str, *paths: str) -> None:
    style.apply_style()
    pk = pk[pk["split"] == split]
    temps = sorted(set(pk["temperature"]), reverse=True)
    fig, axes = style.panel_grid(1, max(1, len(temps)), panel=(3.2, 3.0), sharey=True)
    for ax, t in zip(axes[0], temps):
        c = pk[pk["temperature"] == t]
        _bands(ax, c, variants, "k")
        ax.set_xscale("log")
        ax.set_title(f"{split}, T = {t:g}", fontsize="small")
        ax.set_xlabel("k (samples)")
    axes[0, 0].set_ylabel("pass@k (unbiased, 95% CI)")
    axes[0, -1].legend(fontsize="small")
    style.save_figure(fig, *paths)


# entry points of the plot rules: (input files, output files, split, variants, splits)
def draw_temperature(inputs: dict, outputs: list, split=None, variants=(), splits=()) -> None:
    temperature_curves(pd.read_csv(inputs["curve"]), variants, *outputs)


def draw_pass_at_k(inputs: dict, outputs: list, split=None, variants=(), splits=()) -> None:
    pk = pd.read_csv(inputs["pass_k"])
    split = "test" if (pk["split"] == "test").any() else str(pk["split"].iloc[0])
    pass_at_k_curves(pk, variants, split, *outputs)
