"""Figure of the fixed-point test (Thm 2-3 at the population and at finite group size G, Thm 5):
one column per beta (one beta: the two panels side by side). Top: each prompt's measured plateau (every seed) against its p_ref, beside
the predicted curves p*(p_ref) (Thm 2, solid black) and p*_G(p_ref) of each run's variant and G
(dashed, the run's colour), the baselines y = p_ref ("stays") and y = 1 ("goes to 1", mirror's
limit, Thm 5). Bottom: measured plateau against the predicted p*_G, y = x, with intervals (Wilson
for the plateau, p*_G propagated from p_ref's). Reads only the stage's CSV files.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from grpo_repro import style
from grpo_repro import variants as reg
from grpo_repro.dynamics import prediction as pred

#: a base run's colour, {variant}_{kl}: its variant's (grpo_repro.style), the k3 runs' second one
RUN_COLORS = {
    **{f"{v}_k3_ratio": style.variant_color(v) for v in reg.names(trained=True)},
    **{f"{v}_k3": style.K3_COLORS[v] for v in reg.names(trained=True) if v in style.K3_COLORS},
}
#: colours of the other runs (group sizes, factors), in the order of their names
OTHER_COLORS = ("#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#ff7f0e", "#aec7e8")


def _colors(runs) -> dict:
    others = [r for r in sorted(runs) if r not in RUN_COLORS]
    out = {r: OTHER_COLORS[i % len(OTHER_COLORS)] for i, r in enumerate(others)}
    return {**out, **{r: c for r, c in RUN_COLORS.items() if r in set(runs)}}


def draw(inputs: dict, outputs: list, eps: float = 1e-5, **_) -> None:
    prompts = pd.read_csv(inputs["prompts"])
    summary = pd.read_csv(inputs["summary"])
    betas = sorted(prompts["beta"].unique())
    colors = _colors(prompts["run"].unique())
    style.apply_style()
    wide = (
        len(betas) == 1
    )  # one beta (the compact study, the group sweep): the two panels side by side
    shape = (1, 2) if wide else (2, len(betas))
    fig, axes = style.panel_grid(*shape, panel=(3.3, 3.0), squeeze=False)
    grid = np.linspace(0.005, 0.995, 199)
    for j, beta in enumerate(betas):
        top, bottom = (axes[0, 0], axes[0, 1]) if wide else (axes[0, j], axes[1, j])
        lim = pred.orbit_limits(grid, beta, eps)
        ok = lim["kind"] == "fixed_point"
        top.plot(grid[ok], lim["a"][ok], color="k", lw=1.2, label="p*(p_ref), Thm 2")
        has_p_star = prompts["variant"].map(lambda v: reg.plateau_base(v) is not None)
        at_beta = prompts[(prompts["beta"] == beta) & has_p_star]
        for (run, variant, g_size), _ in at_beta.groupby(["run", "variant", "G"], sort=True):
            base = reg.plateau_base(variant).name
            lim = pred.orbit_limits(grid, beta, eps, group_size=int(g_size), variant=base)
            ok = lim["kind"] == "fixed_point"
            top.plot(
                grid[ok],
                lim["a"][ok],
                color=colors[run],
                ls="--",
                lw=1.0,
                label=f"p*_G, {variant} G = {int(g_size)}",
            )
        top.plot([0, 1], [0, 1], color="0.6", ls="--", lw=0.8, label="stays at p_ref")
        top.axhline(1.0, color="0.6", ls=":", lw=0.8, label="goes to 1")
        for (run, variant), g in prompts[prompts["beta"] == beta].groupby(
            ["run", "variant"], sort=True
        ):
            c = colors[run]
            s = summary[(summary["run"] == run) & (summary["beta"] == beta)]
            gap = f" (gap to p*_G {s['gap_pred_G'].iloc[0]:.3f})" if len(s) else ""
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
            if reg.plateau_base(variant) is not None:
                xerr = [g["p_pred_G"] - g["p_pred_G_lo"], g["p_pred_G_hi"] - g["p_pred_G"]]
                bottom.errorbar(
                    g["p_pred_G"],
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
        bottom.set(xlim=(0, 1.03), ylim=(0, 1.03), xlabel="predicted p*_G")
        top.legend(fontsize=5.5, loc="lower right")
    for ax in axes[:, 0] if not wide else axes[0]:
        ax.set_ylabel("measured plateau")
    what = "per-prompt plateau vs" if wide else "per-prompt plateau of GRPO training vs"
    fig.suptitle(
        f"Fixed-point test: {what} the fixed points of h and h_G (eps = {style.fmt(eps)})",
        fontsize=8 if wide else None,
    )
    style.save_figure(fig, *outputs)
