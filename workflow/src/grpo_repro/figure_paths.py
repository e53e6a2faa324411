"""File names of the figures stage (Fig 1, 2, 4, 5 and beyond): one source of truth for the rules
(workflow/rules/figures.smk) and the plot functions (grpo_repro.plotting.figures)."""

from __future__ import annotations

FIGURES = "results/figures"


def tag(x) -> str:
    """A file-name-safe tag of a number or of the string 'p_ref': 1e-05 -> '1em05', 0.1 -> '0p1'."""
    if isinstance(x, str):
        return x
    x = float(x)
    if x != 0 and (abs(x) < 1e-3 or abs(x) >= 1e4):
        return f"{x:.0e}".replace("-", "m").replace("+", "")
    return f"{x:g}".replace(".", "p").replace("-", "m")


def fig2_stem(eps) -> str:
    return f"fig2_h_map_eps_{tag(eps)}"


def fig5_stem(p0) -> str:
    return f"fig5_iterations_p0_{tag(p0)}"


def pair(stem: str, root: str = FIGURES) -> list[str]:
    """[png, pdf] paths of a figure stem."""
    return [f"{root}/{stem}.png", f"{root}/{stem}.pdf"]
