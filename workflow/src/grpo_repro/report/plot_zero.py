"""The zero-success study's figure (Sec. 3 boundary case p_ref = 0; grpo_repro.zero), from its CSVs
only: per split, the confirmed zeros' pooled success at each checkpoint (every run; the control
dashed) beside the theory's prediction (stays at 0) and pi_ref's bound; pass@k of pi_ref and of each
run's final checkpoint on the same prompts."""

from __future__ import annotations

import pandas as pd

from grpo_repro import style
from grpo_repro.zero import CONTROL, HELD_OUT


def _variant(run: str) -> str:
    return "ref" if run == "ref" else run.removeprefix(CONTROL).split("/")[0]


def _label(run: str) -> str | None:
    """Legend entries: pi_ref, the control, each variant once (its first seed)."""
    if run.startswith(CONTROL):
        return f"control: {style.variant_label(_variant(run))} on the zeros alone"
    return style.variant_label(_variant(run)) if run == "ref" or run.endswith("seed_0") else None


def draw(table_csv: str, passk_csv: str, bound: float, paths: list[str]) -> None:
    style.apply_style()
    table, passk = pd.read_csv(table_csv), pd.read_csv(passk_csv)
    splits = sorted(set(table["split"])) or [HELD_OUT]
    fig, axes = style.panel_grid(2, len(splits), panel=(3.6, 2.6))
    for j, split in enumerate(splits):
        ax, bx = axes[0, j], axes[1, j]
        t = table[table["split"] == split]
        ref = t[t["run"] == "ref"]
        for run, g in t[t["run"] != "ref"].groupby("run", sort=True):
            g = pd.concat([ref, g]).sort_values("step")
            ax.plot(
                g["step"], 100 * g["p_hat"], color=style.variant_color(_variant(run)), lw=1,
                ls="--" if run.startswith(CONTROL) else "-", alpha=0.8,
            )  # fmt: skip
        ax.axhline(100 * bound, color="0.4", ls=":", lw=1, label="pi_ref's bound")
        ax.axhline(0, color="k", lw=1.5, label="theory: stays at 0")
        ax.set(title=f"{split.replace('_', '-')}: {int(ref['prompts'].max()) if len(ref) else 0} zeros",
               xlabel="step", ylabel="success on zeros (%)")  # fmt: skip
        p = passk[passk["split"] == split]
        for run, g in p.groupby("run", sort=True):
            bx.plot(
                g["k"], 100 * g["pass_at_k"], color=style.variant_color(_variant(run)), lw=1,
                ls="--" if run.startswith(CONTROL) else "-",
                label=_label(run),
            )  # fmt: skip
        bx.set(xscale="log", xlabel="k", ylabel="pass@k on zeros (%)")
        bx.legend(fontsize=6)
        ax.legend(fontsize=6)
    style.save_figure(fig, *paths)
