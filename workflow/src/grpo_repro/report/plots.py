"""Figures of the report stage, drawn only from the data frames the compute rules wrote (CSV/JSON):
restyling reruns these functions, never evaluation or training.

* `trajectories`       Fig 3 of the paper: per-prompt success rate along checkpoints, Wilson 95% bars,
                       one panel per variant; prompts with p_ref = 0 dashed with open markers;
* `amplification_mean` mean success vs step per variant, bootstrap 95% band, one panel per split;
* `amplification_scatter` p_ref vs final p per prompt with the diagonal and the shares above/on/below;
* `amplification_hist` histograms of p_ref and of the final p;
* `overlay`            measured trajectories beside the variant's predicted recurrence (top) and
                       measured final p vs p_ref with the predicted iterate/limit curves (bottom).
Style, colours, labels, panel grids and atomic PNG+PDF saving come from grpo_repro.style
(apply_style, variant_color, variant_label, panel_grid, save_figure). The `draw_*` functions are
the plot rules' entry points (grpo_repro.report.registry): they read the rule's input files.

* `draw_training`: the training curves of the GRPO runs (reward, KL, entropy, completion length
  and clip ratio per optimizer step), drawn only from results/report/data/training.csv.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from grpo_repro import style
from grpo_repro.report.tables import METRICS, read_long


def _panels(n: int, nrows: int = 1, width: float = 3.0, height: float = 2.7):
    return style.panel_grid(nrows, n, panel=(width, height), sharey=True)


def _bottom_legend(fig, ax) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        fig.legend(
            handles,
            labels,
            loc="outside lower center",
            ncol=min(len(labels), 7),
            frameon=False,
        )


def _prompt_colors(ids):
    cmap = plt.get_cmap("tab10" if len(ids) <= 10 else "tab20")
    return {pid: cmap(i % cmap.N) for i, pid in enumerate(ids)}


def _errbars(ax, x, y, lo, hi, **kw):
    y, lo, hi = np.asarray(y, float), np.asarray(lo, float), np.asarray(hi, float)
    yerr = np.vstack([np.clip(y - lo, 0, None), np.clip(hi - y, 0, None)])
    return ax.errorbar(x, y, yerr=yerr, capsize=2, elinewidth=0.8, **kw)


def _prompt_bars(ax, frame, ids, colors, **kw):
    """Each prompt's success along the steps with its Wilson bars (dashed, open markers: p_ref = 0);
    yields (its rows, its colour) for each prompt drawn."""
    for pid in ids:
        g = frame[frame["prompt_id"] == pid].sort_values("step")
        if g.empty:
            continue
        c, zero = colors[pid], bool((g["successes_ref"] == 0).iloc[0])
        kw.update(ls="--" if zero else "-", mfc="white" if zero else c)
        label = f"{pid} (p_ref=0)" if zero else str(pid)
        _errbars(
            ax,
            g["step"],
            g["p_hat"],
            g["ci_low"],
            g["ci_high"],
            color=c,
            marker="o",
            label=label,
            **kw,
        )
        yield g, c


# ---------------------------------------------------------------------------------------------
# trajectories (Fig 3)
# ---------------------------------------------------------------------------------------------
def trajectories(traj: pd.DataFrame, split: str, variants, *paths: str) -> None:
    style.apply_style()
    t = traj[traj["split"] == split]
    ids = sorted(t["prompt_id"].unique(), key=lambda s: (len(s), s))
    colors = _prompt_colors(ids)
    fig, axes = _panels(len(variants))
    for ax, v in zip(axes[0], variants):
        list(_prompt_bars(ax, t[t["variant"] == v], ids, colors, ms=3.5, lw=1.2))
        ax.set_title(style.variant_label(v))
        ax.set_xlabel("training step")
        ax.set_ylim(-0.03, 1.03)
    axes[0, 0].set_ylabel(f"success rate ({split} prompt)")
    _bottom_legend(fig, axes[0, 0])
    fig.suptitle(
        f"Per-prompt success along checkpoints ({split}); Wilson 95% bars; dashed/open = p_ref = 0"
    )
    style.save_figure(fig, *paths)


# ---------------------------------------------------------------------------------------------
# amplification
# ---------------------------------------------------------------------------------------------
def amplification_mean(mean: pd.DataFrame, splits, variants, *paths: str) -> None:
    style.apply_style()
    fig, axes = _panels(len(splits), width=4.2, height=3.2)
    mean = mean[mean["seed"].astype(str) == "all"]  # pooled over GRPO seeds
    for ax, split in zip(axes[0], splits):
        m = mean[mean["split"] == split]
        for v in variants:
            g = m[m["variant"] == v].sort_values("step")
            c = style.variant_color(v)
            ax.plot(g["step"], g["mean"], marker="o", ms=3, color=c, label=style.variant_label(v))
            ax.fill_between(g["step"], g["low"], g["high"], color=c, alpha=0.2, lw=0)
        ax.set_title(f"{split} prompts")
        ax.set_xlabel("training step")
    axes[0, 0].set_ylabel("mean success (95% CI, seeds x prompts)")
    axes[0, -1].legend(fontsize="small")
    style.save_figure(fig, *paths)


def amplification_scatter(
    prompts: pd.DataFrame, shares: pd.DataFrame, split: str, variants, *paths: str
) -> None:
    style.apply_style()
    fig, axes = _panels(len(variants), height=3.2)
    for ax, v in zip(axes[0], variants):
        g = prompts[(prompts["split"] == split) & (prompts["variant"] == v)]
        ax.scatter(g["p_ref"], g["p_final"], s=9, alpha=0.45, color=style.variant_color(v), lw=0)
        ax.plot([0, 1], [0, 1], color="0.3", lw=0.8, ls="--")
        s = shares[(shares["split"] == split) & (shares["variant"] == v)]
        if len(s):
            r = s.iloc[0]
            ax.text(
                0.97,
                0.03,
                f"above {100 * r.share_above:.0f}%\non {100 * r.share_on:.0f}%\n"
                f"below {100 * r.share_below:.0f}%\n(n = {int(r.n_prompts)})",
                transform=ax.transAxes,
                ha="right",
                va="bottom",
                fontsize="small",
            )
        step = int(g["final_step"].iloc[0]) if len(g) else 0
        ax.set_title(f"{style.variant_label(v)} (step {step})")
        ax.set_xlabel("p_ref (pi_ref)")
        ax.set_xlim(-0.03, 1.03)
        ax.set_ylim(-0.03, 1.03)
        ax.set_aspect("equal")
    axes[0, 0].set_ylabel("final p")
    fig.suptitle(f"Per-prompt success, final checkpoint vs pi_ref ({split})")
    style.save_figure(fig, *paths)


def amplification_hist(prompts: pd.DataFrame, split: str, variants, *paths: str) -> None:
    style.apply_style()
    fig, axes = _panels(len(variants), height=2.8)
    samples = int(prompts["samples"].max()) if len(prompts) else 50
    nb = min(samples + 1, 26)
    bins = np.linspace(0, 1, nb + 1)
    for ax, v in zip(axes[0], variants):
        g = prompts[(prompts["split"] == split) & (prompts["variant"] == v)]
        ax.hist(g["p_ref"], bins=bins, histtype="step", color="0.35", lw=1.4, label="p_ref")
        ax.hist(g["p_final"], bins=bins, alpha=0.55, color=style.variant_color(v), label="final p")
        ax.set_title(style.variant_label(v))
        ax.set_xlabel("per-prompt success rate")
        ax.legend(fontsize="small")
    axes[0, 0].set_ylabel("prompts")
    fig.suptitle(f"Distribution of per-prompt success, pi_ref vs final checkpoint ({split})")
    style.save_figure(fig, *paths)


# ---------------------------------------------------------------------------------------------
# theory overlay
# ---------------------------------------------------------------------------------------------
def overlay(traj: pd.DataFrame, curves: pd.DataFrame, split: str, variants, *paths: str) -> None:
    style.apply_style()
    t = traj[traj["split"] == split]
    sel = t[t["selected"]]
    ids = sorted(sel["prompt_id"].unique(), key=lambda s: (len(s), s))
    colors = _prompt_colors(ids)
    fig, axes = _panels(len(variants), nrows=2, height=3.1)
    for j, v in enumerate(variants):
        ax = axes[0, j]
        tv = sel[sel["variant"] == v]
        last = int(tv["step"].max()) if len(tv) else 1
        for g, c in _prompt_bars(ax, tv, ids, colors, ms=3, lw=1.1):
            ax.plot(g["step"], g["p_pred_iter"], color=c, ls=":", lw=1.3)
            ax.plot(
                [last * 1.04],
                [g["p_pred_limit"].iloc[-1]],
                marker=">",
                color=c,
                ms=5,
                clip_on=False,
            )
        ax.set_title(
            f"{style.variant_label(v)}\nmeasured vs iterate n = checkpoint index (dotted)",
            fontsize="small",
        )
        ax.set_xlabel("training step (arrow: predicted limit)")
        ax.set_ylim(-0.03, 1.03)
        ax2 = axes[1, j]
        f = t[(t["variant"] == v) & (t["step"] == t[t["variant"] == v]["step"].max())]
        ax2.scatter(
            f["p_ref"],
            f["p_hat"],
            s=9,
            alpha=0.45,
            color=style.variant_color(v),
            lw=0,
            label="measured final",
        )
        cv = curves[curves["variant"] == v].sort_values("p_ref")
        if len(cv):
            n = int(cv["n_iter"].iloc[0])
            ax2.plot(cv["p_ref"], cv["p_iter_1"], color="0.2", ls=":", lw=1.1, label="iterate 1")
            ax2.plot(
                cv["p_ref"], cv["p_iter_n"], color="0.2", ls="--", lw=1.1, label=f"iterate {n}"
            )
            ax2.plot(cv["p_ref"], cv["p_limit"], color="0.2", lw=1.1, label="limit (h)")
            g_size = int(cv["G"].iloc[0])  # the finite-group map at the run's G
            ax2.plot(
                cv["p_ref"], cv["p_limit_G"], color="C3", lw=1.1, label=f"limit (h_G, G={g_size})"
            )
        ax2.plot([0, 1], [0, 1], color="0.6", lw=0.7)
        ax2.set_xlabel("measured p_ref")
        ax2.set_xlim(-0.03, 1.03)
        ax2.set_ylim(-0.03, 1.03)
        if j == len(variants) - 1:
            ax2.legend(fontsize="x-small", loc="lower right")
    axes[0, 0].set_ylabel("success rate")
    axes[1, 0].set_ylabel("final p (measured) / predicted")
    _bottom_legend(fig, axes[0, 0])
    fig.suptitle(
        f"Theory overlay ({split}): each variant's recurrence from the measured p_ref. "
        "Training steps are not exact iterations.",
        fontsize="medium",
    )
    style.save_figure(fig, *paths)


# ---------------------------------------------------------------------------------------------
# entry points of the plot rules: (input files, output files, split, variants, splits)
# ---------------------------------------------------------------------------------------------
def draw_trajectories(inputs: dict, outputs: list, split=None, variants=(), splits=()) -> None:
    trajectories(read_long(inputs["trajectories"]), split, variants, *outputs)


def draw_amplification_mean(
    inputs: dict, outputs: list, split=None, variants=(), splits=()
) -> None:
    amplification_mean(pd.read_csv(inputs["mean"]), splits, variants, *outputs)


def draw_amplification(inputs: dict, outputs: list, split=None, variants=(), splits=()) -> None:
    """The mean over GRPO seeds of each prompt's final success (seed "all")."""
    prompts = read_long(inputs["prompts"])
    prompts = prompts[prompts["seed"].astype(str) == "all"]
    shares = pd.read_csv(inputs["shares"])
    shares = shares[shares["seed"].astype(str) == "all"]
    amplification_scatter(prompts, shares, split, variants, *outputs[:2])
    amplification_hist(prompts, split, variants, *outputs[2:])


def draw_overlay(inputs: dict, outputs: list, split=None, variants=(), splits=()) -> None:
    overlay(
        read_long(inputs["trajectories"]), pd.read_csv(inputs["curves"]), split, variants, *outputs
    )


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
