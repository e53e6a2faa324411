"""Registry of the figure families of stage 2 (Fig 1, 2, 4, 5 and beyond the paper).

One `Family` per figure family: its compute function (frames -> CSV), the `figures:` config keys
that function reads, its plot function (CSV -> PNG + PDF) and its report caption. The rule file
workflow/rules/figures.smk generates one compute rule and one plot rule per entry, so adding a
figure is one entry here, its two functions and its report caption (a file in workflow/report/).
Functions are named as "module:function" of grpo_repro.figures and resolved only when run: a
compute rule's code is its compute module alone, a plot rule's its plot module alone (restyling
never reruns a compute rule).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field

from grpo_repro import io


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


def _one(stem: str) -> Callable[[dict], list[tuple[str, dict]]]:
    return lambda cfg: [(stem, {})]


@dataclass(frozen=True)
class Family:
    """One figure family: compute rule figures_data_<name>, plot rule figures_plot_<name>."""

    name: str
    doc: str  # what it shows, with the paper's reference: the rules' docstring (`--list-rules`)
    compute: str  # "module:function" in grpo_repro.figures: cfg -> {frame name: DataFrame}
    csvs: dict  # frame name -> CSV stem under results/figures
    keys: tuple  # keys of the `figures:` section the compute function reads (its rerun trigger)
    plot: str  # "module:function" in grpo_repro.figures: (inputs, outputs, **extra) -> None
    # figures config -> [(figure stem, report labels)]; a family of several figures labels them
    # {"figure": family name, <parameter>: value}: the report's table (and its two-value toggle,
    # which needs the same "figure" under both values) keys results on these labels
    stems: Callable[[dict], list[tuple[str, dict]]]
    caption: str  # the report caption, workflow/report/<caption>
    subcategory: str  # report subcategory
    plot_inputs: tuple = ()  # frames the plot reads (empty: all)
    extra: Callable[[dict], dict] = field(default=lambda cfg: {})  # plot keyword arguments

    def plot_frames(self) -> dict:
        names = self.plot_inputs or tuple(self.csvs)
        return {n: self.csvs[n] for n in names}


FAMILIES = (
    Family(
        "fig1",
        "Fig 1 / eq. (4): w+(p), w-(p), Omega(p) without smoothing and for every fig1_eps.",
        "compute:fig1",
        {"csv": "fig1_weights"},
        ("fig1_eps",),
        "plot_paper:plot_fig1",
        _one("fig1_weights"),
        "figures_fig1.rst",
        "Fig 1 (weights)",
    ),
    Family(
        "fig2",
        "Fig 2 / Thm 2-3: h_{eps,p_ref}(p) and every fixed point (h'(p*), stability).",
        "compute:fig2",
        {"curves": "fig2_h_map", "fixed_points": "fig2_fixed_points"},
        ("eps", "fig2_beta", "fig2_p_ref"),
        "plot_paper:plot_fig2",
        lambda cfg: [(fig2_stem(e), {"figure": "fig2_h_map", "eps": str(e)}) for e in cfg["eps"]],
        "figures_fig2.rst",
        "Fig 2 (h map)",
    ),
    Family(
        "fig4",
        "Fig 4 / Thm 6, Lemma 1: the stability threshold B(p*).",
        "compute:fig4",
        {"csv": "fig4_B"},
        ("eps_dynamics",),
        "plot_paper:plot_fig4",
        _one("fig4_B"),
        "figures_fig4.rst",
        "Fig 4 (stability threshold)",
        extra=lambda cfg: {"betas": list(cfg["fig5_beta"])},
    ),
    Family(
        "fig5",
        "Fig 5 / Thm 2: p_{n+1} = h(p_n) from p_0 = 0.1 and from p_0 = p_ref.",
        "compute:fig5",
        {"csv": "fig5_iterations"},
        ("eps_dynamics", "n_iter", "fig5_p0", "fig5_beta", "fig5_p_ref"),
        "plot_paper:plot_fig5",
        lambda cfg: [
            (fig5_stem(p), {"figure": "fig5_iterations", "p0": str(p)}) for p in cfg["fig5_p0"]
        ],
        "figures_fig5.rst",
        "Fig 5 (iterations)",
        extra=lambda cfg: {"p0_specs": list(cfg["fig5_p0"])},
    ),
    Family(
        "fixed_point_map",
        "Beyond the paper (Thm 2, 3, 6): all fixed points over a (beta, p_ref) "
        "grid; per cell the number of fixed points / 2-cycles and where the orbit from p_ref ends.",
        "compute:fixed_point_map",
        {"fixed_points": "fixed_points", "summary": "fixed_point_summary"},
        ("eps", "map_beta", "map_p_ref", "map_n_grid", "bif_burn_in", "bif_keep"),
        "plot_maps:plot_fixed_point_map",
        _one("fixed_point_map"),
        "figures_fixed_points.rst",
        "Beyond: fixed-point map",
        plot_inputs=("summary",),
    ),
    Family(
        "bifurcation",
        "Beyond the paper (Thm 6): attractor after burn-in over beta, fixed points and "
        "every 2-cycle (the paper's 'divergent' example beta=5, p_ref=0.001, eps=1e-5).",
        "compute:bifurcation",
        {
            "attractor": "bifurcation",
            "fixed_points": "bifurcation_fixed_points",
            "two_cycles": "two_cycles",
        },
        ("eps_dynamics", "bif_beta", "bif_p_ref", "bif_burn_in", "bif_keep", "two_cycle_examples"),
        "plot_maps:plot_bifurcation",
        _one("bifurcation"),
        "figures_bifurcation.rst",
        "Beyond: bifurcation diagram",
    ),
    Family(
        "variant_dynamics",
        "Thm 2, 5, 9, Sec. 5: PoS recurrences of GRPO, Mirror, Dr., Mirror Dr. "
        "and two-KL GRPO from the same p_ref.",
        "compute:variant_dynamics",
        {"csv": "variant_dynamics"},
        ("eps_dynamics", "n_iter", "variant_beta", "variant_p_ref", "two_kl_alpha"),
        "plot_maps:plot_variant_dynamics",
        _one("variant_dynamics"),
        "figures_variant_dynamics.rst",
        "Beyond: variant dynamics",
    ),
    Family(
        "omega_group",
        "docs/theory.md Sec. 8: expected weights at a finite group size, each group "
        "whitened by its own mean and spread: Omega_G and Omega/Omega_G over p for every G.",
        "compute:omega_group",
        {"csv": "omega_group"},
        ("eps_dynamics", "omega_g_sizes"),
        "plot_maps:plot_omega_group",
        _one("omega_group"),
        "figures_finite_group.rst",
        "Beyond: finite group size",
    ),
    Family(
        "p_star_group",
        "docs/theory.md Sec. 8: the fixed point reached from p_ref at a finite group size "
        "(p*_G of h_G) vs the population p* of h, for GRPO and Dr. GRPO, over p_ref.",
        "compute:p_star_group",
        {"csv": "p_star_group"},
        ("eps_dynamics", "p_star_g_sizes", "p_star_g_beta", "p_star_g_p_ref"),
        "plot_maps:plot_p_star_group",
        _one("p_star_group"),
        "figures_finite_group.rst",
        "Beyond: finite group size",
    ),
    Family(
        "oracle_exact",
        "Thm 8, Lemma 2-3, Thm 9: exact Gibbs iterates on finite softmax policies vs "
        "the scalar recurrences and vs an independent optimiser; fails if a check fails.",
        "compute_oracle:oracle_exact",
        {"iterates": "oracle_exact", "checks": "oracle_checks"},
        ("oracle", "two_kl_alpha"),
        "plot_oracle:plot_oracle_exact",
        _one("oracle_exact"),
        "figures_oracle.rst",
        "Beyond: finite-policy oracle",
        plot_inputs=("iterates",),
    ),
    Family(
        "oracle_sgd",
        "App. F, Thm 10: sample-based GRPO (G samples, smoothed whitened advantage, mu "
        "steps per batch, clipping as configured) vs the exact iterates; Thm 10's assumption "
        "(one-step errors delta_n) and conclusion per prompt.",
        "compute_oracle:oracle_sgd",
        {"summary": "oracle_sgd", "prompts": "oracle_sgd_prompts", "thm10": "oracle_sgd_thm10"},
        ("oracle",),
        "plot_oracle:plot_oracle_sgd",
        _one("oracle_sgd"),
        "figures_oracle.rst",
        "Beyond: finite-policy oracle",
    ),
)


def family(name: str) -> Family:
    for fam in FAMILIES:
        if fam.name == name:
            return fam
    raise KeyError(f"no figure family {name!r}; known: {', '.join(f.name for f in FAMILIES)}")


def module_of(ref: str) -> str:
    """'compute:fig1' -> 'grpo_repro.figures.compute'."""
    return f"grpo_repro.figures.{ref.split(':')[0]}"


def resolve(ref: str) -> Callable:
    module, func = ref.split(":")
    return getattr(importlib.import_module(module_of(module)), func)


def failed_checks(frames: dict) -> list[str]:
    """Lines naming every failed check in `frames` (only the oracle's `checks` frame has any)."""
    chk = frames.get("checks")
    if chk is None:
        return []
    bad = chk[~chk["passed"].astype(bool)]
    return [
        f"{r.check} variant={r.variant} alpha={r.alpha} init={r.init}: {r.value:.3e} > {r.tol:.1e}"
        for r in bad.itertuples()
    ]


def run(ref: str, cfg: dict, outputs: dict) -> dict:
    """Compute the frames of `ref` ("module:function") and write each to outputs[name] (CSV)."""
    frames = resolve(ref)(cfg)
    missing = set(outputs) - set(frames)
    if missing:
        raise KeyError(f"{ref}: no frame named {sorted(missing)} (have {sorted(frames)})")
    for name, path in outputs.items():
        io.write_csv(path, frames[name])
    return frames
