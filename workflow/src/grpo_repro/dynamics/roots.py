"""Every root of a continuous scalar function on an interval, the search behind the fixed points and
2-cycles of the PoS maps (dynamics.fixed_points: Thm 2-3, Prop. 1, Fig 2, 4).

Roots are bracketed by sign changes of f on a grid; a pair of roots closer than the grid spacing
(a near-tangent crossing) leaves no sign change, so every interior local extremum of f on the grid
whose neighbours share its sign is refined by a bounded minimisation, and kept when it crosses 0.
Each bracket is then refined with Brent's method, and roots within SAME_X (relative) are merged.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq, minimize_scalar

#: two logits closer than this (relative) are the same point
SAME_X = 1e-9


def all_roots(f_vec, f_scalar, grid: np.ndarray) -> list[float]:
    """Every root of f on [grid[0], grid[-1]] bracketed by the grid (plus near-tangent pairs)."""
    xs = np.asarray(grid, float)
    fs = f_vec(xs)
    # refine interior local extrema whose value does not change sign with its neighbours:
    # a positive local min / negative local max may still cross 0 between grid points
    d = np.diff(fs)
    ext = (
        np.where(
            (np.sign(d[:-1]) * np.sign(d[1:]) < 0)
            & (fs[:-2] * fs[1:-1] > 0)
            & (fs[1:-1] * fs[2:] > 0)
        )[0]
        + 1
    )
    extra_x, extra_f = [], []
    for i in ext:
        sgn = 1.0 if fs[i] > 0 else -1.0
        res = minimize_scalar(
            lambda t: sgn * f_scalar(t),
            bounds=(xs[i - 1], xs[i + 1]),
            method="bounded",
            options={"xatol": 1e-13},
        )
        if sgn * res.fun < 0:
            extra_x.append(res.x)
            extra_f.append(f_scalar(res.x))
    if extra_x:
        xs = np.concatenate([xs, extra_x])
        fs = np.concatenate([fs, extra_f])
        order = np.argsort(xs, kind="stable")
        xs, fs = xs[order], fs[order]
    roots = list(xs[fs == 0.0])
    for i in np.where(fs[:-1] * fs[1:] < 0)[0]:
        roots.append(
            brentq(
                f_scalar, xs[i], xs[i + 1], xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500
            )
        )
    roots.sort()
    out = []
    for r in roots:
        if not out or abs(r - out[-1]) > SAME_X * (1 + abs(r)):
            out.append(float(r))
    return out
