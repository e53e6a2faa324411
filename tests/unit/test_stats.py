"""Interval estimates: Wilson score intervals against published values, bootstrap and paired
differences against their definitions."""

import numpy as np
import pytest

from grpo_repro.stats import bootstrap_mean_ci, wilson

# Wilson score interval without continuity correction (Newcombe 1998, Stat Med 17:857, Table I,
# method 3), and boundary / textbook cases (0/50 upper = z^2 / (n + z^2)).
PUBLISHED = [
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0, 0.1611),
    (1, 29, 0.0061, 0.1718),
    (0, 50, 0.0, 0.0713),
    (50, 50, 0.9287, 1.0),
    (25, 50, 0.3664, 0.6336),
    (1, 10, 0.0179, 0.4042),
]


@pytest.mark.parametrize("k,n,low,high", PUBLISHED)
def test_wilson_published_values(k, n, low, high):
    lo, hi = wilson(k, n)
    assert lo == pytest.approx(low, abs=1e-4)
    assert hi == pytest.approx(high, abs=1e-4)


def test_wilson_closed_forms_and_vectorised():
    z2 = 1.959963984540054**2
    assert wilson(0, 50)[1] == pytest.approx(z2 / (50 + z2), abs=1e-12)
    assert wilson(50, 50)[0] == pytest.approx(50 / (50 + z2), abs=1e-12)
    k = np.array([0, 1, 25, 50])
    lo, hi = wilson(k, np.full(4, 50))
    assert lo.shape == hi.shape == (4,)
    for i in range(4):
        assert (lo[i], hi[i]) == pytest.approx(wilson(int(k[i]), 50), abs=1e-15)
    assert np.all(lo <= k / 50) and np.all(k / 50 <= hi)
    assert wilson(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson(3, 2)


def test_wilson_coverage():
    """Coverage of the nominal 95% interval over p on a grid is close to 0.95 on average."""
    from scipy.stats import binom

    n = 50
    k = np.arange(n + 1)
    lo, hi = wilson(k, np.full_like(k, n))
    cover = []
    for p in np.linspace(0.05, 0.95, 19):
        inside = (lo <= p) & (p <= hi)
        cover.append(binom.pmf(k, n, p)[inside].sum())
    assert 0.93 < np.mean(cover) < 0.97


def test_bootstrap_mean_ci():
    rng = np.random.default_rng(0)
    x = rng.normal(1.0, 2.0, size=400)
    mean, lo, hi = bootstrap_mean_ci(x, n_boot=2000, seed=1)
    assert mean == pytest.approx(x.mean())
    se = x.std(ddof=1) / np.sqrt(x.size)
    assert lo == pytest.approx(mean - 1.96 * se, abs=0.3 * se)
    assert hi == pytest.approx(mean + 1.96 * se, abs=0.3 * se)
    assert bootstrap_mean_ci(x, 500, seed=3) == bootstrap_mean_ci(x, 500, seed=3)
    assert bootstrap_mean_ci([0.5] * 5, 100, seed=0) == (0.5, 0.5, 0.5)
