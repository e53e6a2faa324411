"""Figure of the fixed-point test (Thm 2-3, Thm 5): one column per beta. Top: each prompt's measured
plateau against its p_ref, beside the predicted p*(p_ref) curve of grpo (Thm 2), the baselines
y = p_ref ("stays") and y = 1 ("goes to 1", mirror's limit, Thm 5). Bottom: measured plateau
against predicted p*, y = x, with intervals (Wilson for the plateau, p* propagated from p_ref's).
Reads only the stage's CSV files."""

from __future__ import annotations

import numpy as np
import pandas as pd

from grpo_repro import style
from grpo_repro.dynamics import prediction as pred

RUN_COLORS = {
    "grpo_k3_ratio": "#1f77b4",
    "grpo_k3": "#17becf",
    "mirror_k3_ratio": "#d62728",
    "mirror_k3": "#ff9896",
}


def _color(run: str) -> str:
    return RUN_COLORS.get(run, style.variant_color(run.split("_k3")[0]))


def draw(inputs: dict, outputs: list, eps: float = 1e-5, **_) -> None:
    prompts = pd.read_csv(inputs["prompts"])
    summary = pd.read_csv(inputs["summary"])
    betas = sorted(prompts["beta"].unique())
    style.apply_style()
    fig, axes = style.panel_grid(2, len(betas), panel=(3.3, 3.0), squeeze=False)
    grid = np.linspace(0.005, 0.995, 199)
    for j, beta in enumerate(betas):
        top, bottom = axes[0, j], axes[1, j]
        lim = pred.orbit_limits(grid, beta, eps)
        ok = lim["kind"] == "fixed_point"
        top.plot(grid[ok], lim["a"][ok], color="k", lw=1.2, label="p*(p_ref), Thm 2")
        top.plot([0, 1], [0, 1], color="0.6", ls="--", lw=0.8, label="stays at p_ref")
        top.axhline(1.0, color="0.6", ls=":", lw=0.8, label="goes to 1")
        for run, g in prompts[prompts["beta"] == beta].groupby("run", sort=True):
            c = _color(run)
            s = summary[(summary["run"] == run) & (summary["beta"] == beta)]
            gap = f" (gap {s['gap_prediction'].iloc[0]:.3f})" if len(s) else ""
            yerr = [g["p_plateau"] - g["plateau_lo"], g["plateau_hi"] - g["p_plateau"]]
            top.errorbar(
                g["p_ref"],
                g["p_plateau"],
                yerr=yerr,
                fmt="o",
                ms=3,
                color=c,
                elinewidth=0.6,
                alpha=0.8,
                label=f"{run}{gap}",
            )
            if run.startswith("grpo"):
                xerr = [g["p_pred"] - g["p_pred_lo"], g["p_pred_hi"] - g["p_pred"]]
                bottom.errorbar(
                    g["p_pred"],
                    g["p_plateau"],
                    xerr=xerr,
                    yerr=yerr,
                    fmt="o",
                    ms=3,
                    color=c,
                    elinewidth=0.6,
                    alpha=0.8,
                    label=run,
                )
        bottom.plot([0, 1], [0, 1], color="k", lw=0.8)
        top.set(xlim=(0, 1), ylim=(0, 1.03), title=f"beta = {style.fmt(beta)}", xlabel="p_ref")
        bottom.set(xlim=(0, 1.03), ylim=(0, 1.03), xlabel="predicted p*")
        top.legend(fontsize=5.5, loc="lower right")
    axes[0, 0].set_ylabel("measured plateau")
    axes[1, 0].set_ylabel("measured plateau")
    fig.suptitle(
        "Fixed-point test: per-prompt plateau of GRPO training vs the fixed point of h "
        "(eps = " + style.fmt(eps) + ")"
    )
    style.save_figure(fig, *outputs)
