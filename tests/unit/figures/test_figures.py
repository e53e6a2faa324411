"""Stage 2 plumbing (Fig 1, 2, 4, 5 and beyond): config keys of `figures:` in sync with the schema,
CSV column contracts, plots drawn from CSVs only (PNG + PDF, atomic), and (slow) restyling reruns
plot rules only."""

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from grpo_repro import config as cfgmod
from grpo_repro import variants as reg
from grpo_repro.config_checks import load_schema
from grpo_repro.figures import compute as fd
from grpo_repro.figures import compute as fm
from grpo_repro.figures import registry
from grpo_repro.figures.registry import fig2_stem, fig5_stem, tag
from tests.helpers import ROOT


@pytest.fixture(scope="module")
def fig_cfg():
    return cfgmod.load(ROOT / "config" / "config.yaml")["figures"]


def test_every_figures_key_is_required_and_set_in_the_default_file(fig_cfg):
    """The schema requires every `figures:` key (config/config.yaml holds each value, the one place;
    the schema holds no defaults) and config/paper.yaml, which changes none, runs the same
    figures."""
    schema = load_schema()["properties"]["figures"]
    assert set(schema["required"]) == set(schema["properties"]) == set(fig_cfg)
    assert "default" not in str(load_schema())
    assert cfgmod.load(ROOT / "config" / "paper.yaml")["figures"] == fig_cfg


def test_file_name_tags():
    assert (
        tag(1e-5) == "1em05"
        and tag(0.01) == "0p01"
        and tag(0.1) == "0p1"
        and tag("p_ref") == "p_ref"
    )
    assert (
        fig2_stem(1e-5) == "fig2_h_map_eps_1em05"
        and fig5_stem("p_ref") == "fig5_iterations_p0_p_ref"
    )
    assert "-" not in fig2_stem(1e-12) + fig5_stem(0.25)


def test_csv_contracts(fig_cfg):
    small = copy.deepcopy(fig_cfg)
    small.update(
        map_beta={"lo": 0.5, "hi": 5.0, "n": 3},
        map_p_ref={"lo": 0.001, "hi": 0.5, "n": 3},
        bif_beta={"lo": 4.0, "hi": 6.0, "n": 5},
        bif_p_ref=[0.001],
        bif_burn_in=200,
    )
    f5 = fd.fig5(small)["csv"]
    assert list(f5.columns) == [
        "beta",
        "p_ref",
        "eps",
        "p0",
        "n",
        "p",
        "orbit",
        "p_limit_a",
        "p_limit_b",
        "limit_reached_by_n_iter",
    ]
    assert set(f5.orbit) <= {"fixed_point", "two_cycle", "not_converged"}
    # the published panel beta = 5, p_ref = 1e-4, p0 = 0.1 is chaotic: not a limit
    chaotic = f5[(f5.beta == 5) & (f5.p_ref == 1e-4) & np.isclose(f5.p0, 0.1)]
    assert set(chaotic.orbit) == {"not_converged"} and not chaotic.limit_reached_by_n_iter.any()
    conv = f5[(f5.beta == 1) & (f5.p_ref == 0.2)]
    assert set(conv.orbit) == {"fixed_point"} and conv.p_limit_a.iloc[0] > 0.68
    n_iter = small["n_iter"]
    assert len(f5) == len(small["fig5_beta"]) * len(small["fig5_p_ref"]) * 2 * (n_iter + 1)
    assert set(f5.n) == set(range(n_iter + 1))
    fp = fm.fixed_point_map(small)
    assert list(fp["fixed_points"].columns) == [
        "beta",
        "p_ref",
        "eps",
        "p_star",
        "h_prime",
        "stable",
    ]
    assert (fp["fixed_points"].p_star > fp["fixed_points"].p_ref).all()
    bif = fm.bifurcation(small)
    ex = bif["two_cycles"][bif["two_cycles"].source == "example"]
    assert len(ex) == 1 and bool(ex.stable.iloc[0])
    assert (bif["two_cycles"].source == "bifurcation_grid").any()
    f1 = fd.fig1(small)["csv"]
    assert {0.0, *small["fig1_eps"]} == set(f1.eps)


def test_failed_checks_are_reported():
    chk = pd.DataFrame(
        [
            dict(
                check="pos_vs_scalar_max_abs",
                variant="grpo",
                alpha=np.nan,
                init="ref",
                value=1e-9,
                tol=1e-12,
                passed=False,
            )
        ]
    )
    assert len(registry.failed_checks({"checks": chk})) == 1
    assert registry.failed_checks({"csv": chk}) == []


def test_plots_read_csvs_and_write_png_and_pdf(tmp_path, fig_cfg):
    from grpo_repro import style
    from grpo_repro.figures import plot_paper

    csv = tmp_path / "fig1_weights.csv"
    registry.run("compute:fig1", fig_cfg, {"csv": str(csv)})
    outs = [str(tmp_path / "fig1_weights.png"), str(tmp_path / "fig1_weights.pdf")]
    plot_paper.plot_fig1({"csv": str(csv)}, outs)
    assert all(Path(o).stat().st_size > 1000 for o in outs)
    assert (
        Path(outs[0]).read_bytes()[:4] == b"\x89PNG" and Path(outs[1]).read_bytes()[:4] == b"%PDF"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "fig1_weights.csv",
        "fig1_weights.pdf",
        "fig1_weights.png",
    ]
    for v in ("grpo", "mirror", "dr_grpo", "mirror_dr", "two_kl"):
        assert style.variant_color(v).startswith("#")
    colors = [style.variant_color(v) for v in (*reg.names(), "ref")]
    assert len(set(colors)) == len(colors)


def test_finite_group_maps(fig_cfg, tmp_path):
    """docs/theory.md Sec. 8: Omega/Omega_G at G = 8 (1.08 at p = 0.5), p*_G below p* and
    rising with G, Dr. GRPO's closed form; both plots drawn from the CSVs alone."""
    small = copy.deepcopy(fig_cfg)
    small.update(p_star_g_p_ref={"lo": 0.05, "hi": 0.8, "n": 5}, p_star_g_beta=[2.0])
    om = fm.omega_group(small)["csv"]
    assert list(om.columns) == [
        "G", "eps", "p", "w_plus_g", "w_minus_g", "omega_g", "omega", "ratio"
    ]  # fmt: skip
    mid = om[(om.G == 8) & np.isclose(om.p, 0.5)]
    assert abs(mid.ratio.iloc[0] - 1.0778) < 1e-4
    assert set(om.G) == set(small["omega_g_sizes"]) and (om.ratio > 1).all()
    ps = fm.p_star_group(small)["csv"]
    assert set(ps.kind) == {"fixed_point"} and set(ps.kind_g) == {"fixed_point"}
    assert (ps.p_star_g < ps.p_star).all() and (ps.p_star_g > ps.p_ref).all()
    wide = ps.pivot(index="p_ref", columns="G", values="p_star_g")
    assert (np.diff(wide.to_numpy(), axis=1) > 0).all()  # rises with G
    lr = np.log(ps.p_ref / (1 - ps.p_ref))
    assert np.allclose(np.log(ps.p_star_dr_g / (1 - ps.p_star_dr_g)), lr + (1 - 1 / ps.G) / ps.beta)
    for fam in ("omega_group", "p_star_group"):
        f = registry.family(fam)
        csvs = {n: str(tmp_path / f"{s}.csv") for n, s in f.csvs.items()}
        registry.run(f.compute, small, csvs)
        outs = [str(tmp_path / f"{fam}.png"), str(tmp_path / f"{fam}.pdf")]
        registry.resolve(f.plot)(csvs, outs)
        assert all(Path(o).stat().st_size > 1000 for o in outs)
