"""Data of the figures stage: Fig 1 (weights, eq. 4), Fig 2 (h map, Thm 2), Fig 4 (B, Thm 6),
Fig 5 (iterations, Thm 2) and beyond the paper (fixed-point map, bifurcation diagram and 2-cycles,
variant dynamics of Thm 2/5/9 and Sec. 5, the finite-policy oracle of Thm 8-10).

Every function takes the keys of the `figures:` configuration section its family reads (a dict)
and returns named pandas DataFrames, which grpo_repro.figures.registry.run writes to CSV. No
plotting here: the plot functions (plot_paper, plot_maps, plot_oracle) only read these CSVs. The
oracle's figures are computed in compute_oracle.

Beyond the paper: the fixed-point map of p = h(p) over (beta, p_ref) with each orbit's period and
Lyapunov exponent (Thm 2), the bifurcation diagram and its 2-cycles, the dynamics of every variant
(Thm 2, Thm 5, Thm 9, Sec. 5), and the finite group size of docs/theory.md Sec. 8: Omega/Omega_G
over p, and p*_G (fixed point of h_G) vs p* reached from p_ref, with Dr. GRPO's closed form
logit p*_G = logit p_ref + (1 - 1/G)/beta.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.special import expit

from grpo_repro import variants as reg
from grpo_repro.dynamics import finite_group as fg
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


#: PoS grid of the finite-group weights figure (evenly spaced; Omega_G is finite at 0 and 1)
OMEGA_G_P = np.linspace(0.005, 0.995, 199)


def log_grid(spec: dict) -> np.ndarray:
    """{lo, hi, n} -> n log-spaced values."""
    return np.geomspace(spec["lo"], spec["hi"], int(spec["n"]))


def logit_grid(spec: dict) -> np.ndarray:
    """{lo, hi, n} -> n probabilities evenly spaced in logit."""
    lo, hi = math.log(spec["lo"] / (1 - spec["lo"])), math.log(spec["hi"] / (1 - spec["hi"]))
    return 1 / (1 + np.exp(-np.linspace(lo, hi, int(spec["n"]))))


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
    return {
        "fixed_points": pd.DataFrame(fps, columns=fxp.FIXED_POINT_COLUMNS),
        "summary": pd.DataFrame(summ),
    }


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
    return {
        "attractor": pd.concat(att, ignore_index=True),
        "fixed_points": pd.DataFrame(fps, columns=fxp.FIXED_POINT_COLUMNS),
        "two_cycles": pd.DataFrame(cyc, columns=["source", *fxp.TWO_CYCLE_COLUMNS]),
    }


# ------------------------------------------------------------------------ variant dynamics
def variant_dynamics(cfg: dict) -> dict:
    """PoS recurrences of every variant of the registry (grpo_repro.variants) from the same p_ref:
    the one-anchor ones, then the two-KL ones at every alpha (Delta_R = 0, its exact value along
    iterates started at pi_ref)."""
    eps = float(cfg["eps_dynamics"])
    n_iter = int(cfg["n_iter"])
    rows = []
    n = np.arange(n_iter + 1)
    runs = [(v.name, None) for v in reg.VARIANTS if not v.two_kl]  # (variant, alpha)
    runs += [(v.name, a) for v in reg.VARIANTS if v.two_kl for a in cfg["two_kl_alpha"]]
    for beta in cfg["variant_beta"]:
        for p_ref in cfg["variant_p_ref"]:
            for v, a in runs:
                p = dyn.recurrence(v, p_ref, beta, eps, n_iter, alpha=a)
                alpha = np.nan if a is None else a
                rows.append(
                    pd.DataFrame(
                        dict(variant=v, alpha=alpha, beta=beta, p_ref=p_ref, eps=eps, n=n, p=p)
                    )
                )
    return {"csv": pd.concat(rows, ignore_index=True)}


# ------------------------------------------------------------------------ finite group size
def omega_group(cfg: dict) -> dict:
    """docs/theory.md Sec. 8: w+_G, w-_G, Omega_G (groups whitened by their own mean and spread) and
    eq. (4)'s Omega over p, for every G of omega_g_sizes."""
    eps = float(cfg["eps_dynamics"])
    p = OMEGA_G_P
    om = dyn.omega(p, eps)
    rows = []
    for g in cfg["omega_g_sizes"]:
        w_p, w_m = fg.weights(p, int(g), eps)
        rows.append(
            pd.DataFrame(
                dict(
                    G=int(g),
                    eps=eps,
                    p=p,
                    w_plus_g=w_p,
                    w_minus_g=w_m,
                    omega_g=w_p + w_m,
                    omega=om,
                    ratio=om / (w_p + w_m),
                )
            )
        )
    return {"csv": pd.concat(rows, ignore_index=True)}


def p_star_group(cfg: dict) -> dict:
    """Limit of the GRPO orbit from p_0 = p_ref under h (p*) and under h_G (p*_G) over a p_ref
    grid, for every (beta, G) of p_star_g_beta x p_star_g_sizes (kind: fixed_point, two_cycle or
    not_converged, dynamics.prediction.orbit_limits; p_star is its limit only for fixed_point),
    and Dr. GRPO's closed forms sigma(logit p_ref + 1/beta) and sigma(logit p_ref + (1-1/G)/beta)."""
    eps = float(cfg["eps_dynamics"])
    p_ref = logit_grid(cfg["p_star_g_p_ref"])
    l_ref = np.log(p_ref) - np.log1p(-p_ref)
    rows = []
    for beta in cfg["p_star_g_beta"]:
        pop = prd.orbit_limits(p_ref, beta, eps)
        for g in cfg["p_star_g_sizes"]:
            fin = prd.orbit_limits(p_ref, beta, eps, group_size=int(g))
            rows.append(
                pd.DataFrame(
                    dict(
                        beta=beta,
                        G=int(g),
                        eps=eps,
                        p_ref=p_ref,
                        kind=pop["kind"],
                        p_star=np.where(pop["kind"] == "fixed_point", pop["a"], np.nan),
                        kind_g=fin["kind"],
                        p_star_g=np.where(fin["kind"] == "fixed_point", fin["a"], np.nan),
                        p_star_dr=expit(l_ref + 1 / beta),
                        p_star_dr_g=expit(l_ref + (1 - 1 / int(g)) / beta),
                    )
                )
            )
    return {"csv": pd.concat(rows, ignore_index=True)}
