"""Data of the figures stage: Fig 1 (weights, eq. 4), Fig 2 (h map, Thm 2), Fig 4 (B, Thm 6),
Fig 5 (iterations, Thm 2) and beyond the paper (fixed-point map, bifurcation diagram and 2-cycles,
variant dynamics of Thm 2/5/9 and Sec. 5, the finite-policy oracle of Thm 8-10).

Every function takes the keys of the `figures:` configuration section its family reads (a dict)
and returns named pandas DataFrames, which grpo_repro.figures.registry.run writes to CSV. No
plotting here: the plot functions (plot_paper, plot_maps, plot_oracle) only read these CSVs. The
maps beyond the paper are computed in compute_maps, the oracle's figures in compute_oracle.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from grpo_repro.dynamics import fixed_points as fxp
from grpo_repro.dynamics import maps as dyn
from grpo_repro.dynamics import prediction as prd

#: p grid of the curves (Fig 1, 2, 4): interior points of (0, 1)

N_CURVE = 2001


# ------------------------------------------------------------------------------------ Fig 1
def fig1(cfg: dict) -> dict:
    """w+(p), w-(p), Omega(p) for eps = 0 (the figure) and every smoothed eps of fig1_eps."""
    p = np.linspace(1e-3, 1 - 1e-3, N_CURVE)
    frames = []
    for eps in [0.0] + [float(e) for e in cfg["fig1_eps"]]:
        frames.append(
            pd.DataFrame(
                dict(
                    eps=eps,
                    p=p,
                    w_plus=dyn.w_plus(p, eps),
                    w_minus=dyn.w_minus(p, eps),
                    omega=dyn.omega(p, eps),
                )
            )
        )
    return {"csv": pd.concat(frames, ignore_index=True)}


# ------------------------------------------------------------------------------------ Fig 2
def fig2(cfg: dict) -> dict:
    """h_{eps,p_ref}(p) on a p grid, and every fixed point, for eps x beta x p_ref."""
    p = np.linspace(0.0, 1.0, N_CURVE)
    curves, fps = [], []
    for eps in cfg["eps"]:
        for beta in cfg["fig2_beta"]:
            for p_ref in cfg["fig2_p_ref"]:
                curves.append(
                    pd.DataFrame(
                        dict(eps=eps, beta=beta, p_ref=p_ref, p=p, h=dyn.h(p, p_ref, beta, eps))
                    )
                )
                fps.extend(fxp.fixed_point_rows(beta, p_ref, eps))
    return {
        "curves": pd.concat(curves, ignore_index=True),
        "fixed_points": pd.DataFrame(fps, columns=fxp.FIXED_POINT_COLUMNS),
    }


# ------------------------------------------------------------------------------------ Fig 4
def fig4(cfg: dict) -> dict:
    """B(p*) = p*(1-p*)|2p*-1| / (2 (p*(1-p*)+eps)^{3/2}) on (0, 1)."""
    eps = float(cfg["eps_dynamics"])
    p = np.linspace(0.0, 1.0, N_CURVE)
    return {"csv": pd.DataFrame(dict(eps=eps, p_star=p, B=dyn.B(p, eps)))}


# ------------------------------------------------------------------------------------ Fig 5
#: iterations used to classify a Fig 5 orbit, and the distance at which p_{n_iter} counts as there
FIG5_CLASSIFY_ITER = 3000
FIG5_REACHED_TOL = 1e-6


def fig5(cfg: dict) -> dict:
    """p_{n+1} = h(p_n), n = 0..n_iter, for beta x p_ref x p0 (columns beta,p_ref,eps,p0,n,p), and
    per panel the class of the orbit from the same p0 (dynamics.prediction.orbit_limits over
    FIG5_CLASSIFY_ITER iterations): orbit = fixed_point / two_cycle / not_converged, its limit
    (p_limit_a <= p_limit_b; equal for a fixed point, p_N for not_converged) and whether the
    plotted p_{n_iter} is within FIG5_REACHED_TOL of it (limit_reached_by_n_iter)."""
    eps = float(cfg["eps_dynamics"])
    n_iter = int(cfg["n_iter"])
    rows = []
    for spec in cfg["fig5_p0"]:
        for beta in cfg["fig5_beta"]:
            for p_ref in cfg["fig5_p_ref"]:
                p0 = p_ref if spec == "p_ref" else float(spec)
                seq = dyn.iterate_h(p0, p_ref, beta, eps, n_iter)
                lim = prd.orbit_limits(p_ref, beta, eps, FIG5_CLASSIFY_ITER, p0=p0)
                kind, a, b = str(lim["kind"]), float(lim["a"]), float(lim["b"])
                reached = kind != "not_converged" and (
                    min(abs(seq[-1] - a), abs(seq[-1] - b)) <= FIG5_REACHED_TOL
                )
                rows.append(
                    pd.DataFrame(
                        dict(
                            beta=beta,
                            p_ref=p_ref,
                            eps=eps,
                            p0=p0,
                            n=np.arange(n_iter + 1),
                            p=seq,
                            orbit=kind,
                            p_limit_a=a,
                            p_limit_b=b,
                            limit_reached_by_n_iter=bool(reached),
                        )
                    )
                )
    df = pd.concat(rows, ignore_index=True)
    return {
        "csv": df.drop_duplicates(subset=["beta", "p_ref", "eps", "p0", "n"], ignore_index=True)
    }
