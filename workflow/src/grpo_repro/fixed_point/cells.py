"""Table cells of the fixed-point pages (fixed_point.markdown, fixed_point.markdown_studies): a
number (n/a when missing or NaN), a value with its bootstrap interval, a percentage."""

from __future__ import annotations

import math


def fmt(x, spec="{:.3f}") -> str:
    """x formatted by `spec`, n/a for None or NaN."""
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else spec.format(x)


def ci(row, name, spec="{:.3f}") -> str:
    """row[name] [row[name_lo], row[name_hi]]: the value and its interval."""
    return (
        f"{fmt(row[name], spec)} [{fmt(row[f'{name}_lo'], spec)}, {fmt(row[f'{name}_hi'], spec)}]"
    )


def pct(x) -> str:
    """x as a whole percentage."""
    return fmt(100 * x, "{:.0f}") + "%"
