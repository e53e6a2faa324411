"""The cells of results/summary.md's tables: a success rate as a percentage, with its 95% interval,
a plain number, and a sampling temperature ("greedy" at T = 0)."""

from __future__ import annotations

import math


def pct(x) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}%"


def _ci(m, lo, hi) -> str:
    return f"{pct(m)} [{pct(lo)}, {pct(hi)}]"


def _num(x, fmt="{:.3f}") -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else fmt.format(x)


def _t(x) -> str:
    return "greedy" if float(x) == 0 else f"T={float(x):g}"
