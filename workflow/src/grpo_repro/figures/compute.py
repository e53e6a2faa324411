"""Data of the figures stage: Fig 1 (weights, eq. 4), Fig 2 (h map, Thm 2), Fig 4 (B, Thm 6),
Fig 5 (iterations, Thm 2) and beyond the paper (fixed-point map, bifurcation diagram and 2-cycles,
variant dynamics of Thm 2/5/9 and Sec. 5, the finite-policy oracle of Thm 8-10).

Every function takes the keys of the `figures:` configuration section its family reads (a dict)
and returns named pandas DataFrames, which grpo_repro.figures.registry.run writes to CSV. No
plotting here: the plot functions (plot_paper, plot_maps, plot_oracle) only read these CSVs. The oracle's
compute functions are in compute_oracle.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.special import expit

from grpo_repro.dynamics import fixed_points as fxp
from grpo_repro.dynamics import maps as dyn
from grpo_repro.dynamics import prediction as prd

#: p grid of the curves (Fig 1, 2, 4): interior points of (0, 1)

N_CURVE = 2001


def _p_grid(n: int = N_CURVE, lo: float = 1e-4) -> np.ndarray:
    return np.linspace(lo, 1 - lo, n)


def log_grid(spec: dict) -> np.ndarray:
    """{lo, hi, n} -> n log-spaced values."""
    return np.geomspace(spec["lo"], spec["hi"], int(spec["n"]))


def logit_grid(spec: dict) -> np.ndarray:
    """{lo, hi, n} -> n probabilities evenly spaced in logit."""
    lo, hi = math.log(spec["lo"] / (1 - spec["lo"])), math.log(spec["hi"] / (1 - spec["hi"]))
    return 1 / (1 + np.exp(-np.linspace(lo, hi, int(spec["n"]))))


def resolve_p0(spec, p_ref: float) -> float:
    return p_ref if spec == "p_ref" else float(spec)


# ------------------------------------------------------------------------------------ Fig 1
def fig1(cfg: dict) -> dict:
    """w+(p), w-(p), Omega(p) for eps = 0 (the figure) and every smoothed eps of fig1_eps."""
    p = _p_grid(N_CURVE, lo=1e-3)
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
    cols = ["beta", "p_ref", "eps", "p_star", "h_prime", "stable"]
    return {
        "curves": pd.concat(curves, ignore_index=True),
        "fixed_points": pd.DataFrame(fps, columns=cols),
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
                p0 = resolve_p0(spec, p_ref)
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


# ------------------------------------------------------------------------- fixed-point map
def _attractor(p_ref, beta, eps, burn_in, keep):
    """Iterate from p_0 = p_ref in logits; return the `keep` last logits after burn-in (vectorised)."""
    x = dyn.recurrence("grpo", p_ref, beta, eps, burn_in + keep - 1, return_logits=True)
    return x[burn_in:]


def _period(x_tail: np.ndarray, tol: float = 1e-6) -> np.ndarray:
    """Smallest period in 1..8 of the tail (axis 0), 0 if none (not converged / longer)."""
    per = np.zeros(x_tail.shape[1:], dtype=int)
    scale = 1 + np.abs(x_tail[-1])
    for k in range(8, 0, -1):
        same = np.all(np.abs(x_tail[k:] - x_tail[:-k]) <= tol * scale, axis=0)
        per = np.where(same, k, per)
    return per


def _lyapunov(x_tail: np.ndarray, beta, eps: float) -> np.ndarray:
    """Lyapunov exponent of the orbit tail, mean log|h'(p_n)| (= mean log|H'(x_n)|, conjugacy);
    > 0 on a chaotic attractor, < 0 on a stable cycle ((1/k) log|multiplier|)."""
    d = np.abs(dyn.h_prime_logit(x_tail, beta, eps))
    return np.mean(np.log(np.maximum(d, 1e-300)), axis=0)


def fixed_point_map(cfg: dict) -> dict:
    """All fixed points over a dense (beta, p_ref) grid for every eps (fixed_points.csv), and a
    per-cell summary: number of fixed points / stable ones / 2-cycles, and where the GRPO orbit
    from p_0 = p_ref ends (period 1-8 or 0 = none, Lyapunov exponent, range of the limit set)."""
    betas, p_refs = log_grid(cfg["map_beta"]), logit_grid(cfg["map_p_ref"])
    n_grid = int(cfg["map_n_grid"])
    burn_in, keep = int(cfg["bif_burn_in"]), int(cfg["bif_keep"])
    fps, summ = [], []
    for eps in cfg["eps"]:
        bb, pp = np.meshgrid(betas, p_refs, indexing="ij")
        tail = _attractor(pp, bb, eps, burn_in, keep)
        period = _period(tail)
        lyap = _lyapunov(tail, bb, eps)
        lim_lo, lim_hi = expit(tail.min(axis=0)), expit(tail.max(axis=0))
        for i, beta in enumerate(betas):
            for j, p_ref in enumerate(p_refs):
                rows = fxp.fixed_point_rows(beta, p_ref, eps, n_grid)
                cycles = fxp.two_cycles(beta, p_ref, eps, n_grid)
                fps.extend(rows)
                summ.append(
                    dict(
                        beta=beta,
                        p_ref=p_ref,
                        eps=eps,
                        n_fixed=len(rows),
                        n_stable=sum(r["stable"] for r in rows),
                        n_two_cycles=len(cycles),
                        n_stable_two_cycles=sum(c.stable for c in cycles),
                        min_p_star=min(r["p_star"] for r in rows),
                        orbit_period=int(period[i, j]),
                        orbit_lyapunov=float(lyap[i, j]),
                        orbit_p_lo=float(lim_lo[i, j]),
                        orbit_p_hi=float(lim_hi[i, j]),
                    )
                )
    cols = ["beta", "p_ref", "eps", "p_star", "h_prime", "stable"]
    return {"fixed_points": pd.DataFrame(fps, columns=cols), "summary": pd.DataFrame(summ)}


# ---------------------------------------------------------------------- bifurcation, 2-cycles
def bifurcation(cfg: dict) -> dict:
    """Attractor of p_{n+1} = h(p_n) from p_0 = p_ref after burn-in, over a beta grid for a few
    p_ref (bifurcation diagram); fixed points on the same grid; every 2-cycle found (on that grid
    and at the paper's 'divergent' example beta=5, p_ref=0.001, eps=1e-5)."""
    eps = float(cfg["eps_dynamics"])
    betas = log_grid(cfg["bif_beta"])
    burn_in, keep = int(cfg["bif_burn_in"]), int(cfg["bif_keep"])
    att, fps, cyc = [], [], []
    for p_ref in cfg["bif_p_ref"]:
        tail = _attractor(p_ref, betas, eps, burn_in, keep)  # (keep, n_beta)
        period = _period(tail)
        lyap = _lyapunov(tail, betas, eps)
        pt = expit(tail)
        for i, beta in enumerate(betas):
            vals = np.unique(np.round(pt[:, i], 12))
            att.append(
                pd.DataFrame(
                    dict(
                        beta=beta,
                        p_ref=p_ref,
                        eps=eps,
                        period=int(period[i]),
                        lyapunov=float(lyap[i]),
                        p=vals,
                    )
                )
            )
            fps.extend(fxp.fixed_point_rows(beta, p_ref, eps))
            cyc.extend(
                dict(source="bifurcation_grid", **r) for r in fxp.two_cycle_rows(beta, p_ref, eps)
            )
    for ex in cfg["two_cycle_examples"]:
        cyc.extend(
            dict(source="example", **r)
            for r in fxp.two_cycle_rows(ex["beta"], ex["p_ref"], ex["eps"])
        )
    cols = [
        "source",
        "beta",
        "p_ref",
        "eps",
        "p_a",
        "p_b",
        "logit_a",
        "logit_b",
        "multiplier",
        "stable",
        "residual",
    ]
    return {
        "attractor": pd.concat(att, ignore_index=True),
        "fixed_points": pd.DataFrame(
            fps, columns=["beta", "p_ref", "eps", "p_star", "h_prime", "stable"]
        ),
        "two_cycles": pd.DataFrame(cyc, columns=cols),
    }


# ------------------------------------------------------------------------ variant dynamics
def variant_dynamics(cfg: dict) -> dict:
    """PoS recurrences of grpo, mirror, dr_grpo, mirror_dr and two-KL (mean+var and mean-only,
    every alpha; Delta_R = 0, its exact value along iterates started at pi_ref) from the same p_ref."""
    eps = float(cfg["eps_dynamics"])
    n_iter = int(cfg["n_iter"])
    rows = []
    n = np.arange(n_iter + 1)
    for beta in cfg["variant_beta"]:
        for p_ref in cfg["variant_p_ref"]:
            for v in ("grpo", "mirror", "dr_grpo", "mirror_dr"):
                rows.append(
                    pd.DataFrame(
                        dict(
                            variant=v,
                            alpha=np.nan,
                            beta=beta,
                            p_ref=p_ref,
                            eps=eps,
                            n=n,
                            p=dyn.recurrence(v, p_ref, beta, eps, n_iter),
                        )
                    )
                )
            for v in ("two_kl", "two_kl_dr"):
                for a in cfg["two_kl_alpha"]:
                    rows.append(
                        pd.DataFrame(
                            dict(
                                variant=v,
                                alpha=a,
                                beta=beta,
                                p_ref=p_ref,
                                eps=eps,
                                n=n,
                                p=dyn.recurrence(v, p_ref, beta, eps, n_iter, alpha=a),
                            )
                        )
                    )
    return {"csv": pd.concat(rows, ignore_index=True)}
