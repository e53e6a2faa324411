"""Training curves of the GRPO runs (report category 3, train): reward, KL, entropy, completion
length and clip ratio per optimizer step, drawn only from results/report/data/training.csv
(grpo_repro.report.training writes it from every run's train_log.csv)."""

from __future__ import annotations

import pandas as pd

from grpo_repro import style
from grpo_repro.report.training import METRICS


def training_curves(frame: pd.DataFrame, variants, *paths: str) -> None:
    """One row per metric, one column per variant; one thin line per GRPO seed, the seeds' mean."""
    style.apply_style()
    metrics = [m for _, m in METRICS if m in set(frame["metric"])]
    fig, axes = style.panel_grid(len(metrics), len(variants), panel=(2.8, 1.7), sharex=True)
    for j, v in enumerate(variants):
        f = frame[frame["variant"] == v]
        c = style.variant_color(v)
        for i, m in enumerate(metrics):
            ax = axes[i, j]
            g = f[f["metric"] == m]
            for _, s in g.groupby("seed"):
                ax.plot(s["step"], s["value"], color=c, lw=0.6, alpha=0.45)
            mean = g.groupby("step")["value"].mean()
            ax.plot(mean.index, mean.to_numpy(), color=c, lw=1.4)
            if i == 0:
                ax.set_title(style.variant_label(v))
            if j == 0:
                ax.set_ylabel(m.replace("_", " "), fontsize="small")
        axes[-1, j].set_xlabel("training step")
    fig.suptitle("Training curves: thin = one GRPO seed, thick = mean over seeds")
    style.save_figure(fig, *paths)


def draw_training(inputs: dict, outputs: list, split=None, variants=(), splits=()) -> None:
    training_curves(pd.read_csv(inputs["training"]), variants, *outputs)
