"""The cells of every page's tables and sentences (results/summary.md, the landing page, the
fixed-point pages): a number, n/a when missing or NaN; a success rate as a percentage; a value
with its interval; a sampling temperature ("greedy" at T = 0)."""

from __future__ import annotations

import math


def missing(x) -> bool:
    """None or NaN: shown as n/a."""
    return x is None or (isinstance(x, float) and math.isnan(x))


def num(x, spec="{:.3f}") -> str:
    """x formatted by `spec`, n/a when missing."""
    return "n/a" if missing(x) else spec.format(x)


def pct(x, spec="{:.1f}") -> str:
    """A rate x as a percentage (one decimal unless `spec` says otherwise), n/a when missing."""
    return "n/a" if missing(x) else spec.format(100 * x) + "%"


def pct_ci(m, lo, hi, spec="{:.1f}") -> str:
    """A rate and its interval, in percent: 'm% [lo%, hi%]'."""
    return f"{pct(m, spec)} [{pct(lo, spec)}, {pct(hi, spec)}]"


def ci(row, name, spec="{:.3f}") -> str:
    """row[name] [row[name_lo], row[name_hi]]: the value and its interval."""
    return (
        f"{num(row[name], spec)} [{num(row[f'{name}_lo'], spec)}, {num(row[f'{name}_hi'], spec)}]"
    )


def points(m, lo, hi) -> str:
    """A difference of rates and its interval, in points: '+m [+lo, +hi]'."""
    return f"{100 * m:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]"


def temperature(x, eq="=") -> str:
    """A sampling temperature: 'greedy' at 0, else 'T=x' (`eq` between T and x)."""
    return "greedy" if float(x) == 0 else f"T{eq}{float(x):g}"
