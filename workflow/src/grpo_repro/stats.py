"""Interval estimates of the evaluation tables (Sec. 6: success rate = successes / 50 per question).

* `wilson`: Wilson score interval of one prompt's probability of success p_pi(q) from k successes
  in n samples (no continuity correction; Newcombe 1998, method 3). Vectorised over arrays.
* `bootstrap_mean_ci`: percentile bootstrap interval of a mean over prompts (the mean success).
  Of per-prompt differences a_q - b_q of two models on the same prompts (a GRPO checkpoint
  against pi_ref), it is the paired bootstrap (pairs resampled together).
* `crossed_bootstrap_ci` / `crossed_bootstrap_means`: seeds x prompts, both resampled.
* `pass_at_k`: the unbiased pass@k of Chen et al. (2021) per prompt (the temperature sweep's and
  the zero study's).
* `derive_seed`: seeds derived from names (every stage's random draws), stable across processes
  and Python versions.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

Z95 = 1.959963984540054  # standard normal quantile 0.975
QUANTILES = [0.025, 0.975]  # the bootstrap's 95% percentile interval


def wilson(successes, n, z: float = Z95):
    """Wilson score interval (low, high) for `successes` out of `n`; arrays broadcast elementwise.

    center = (k + z^2/2) / (n + z^2),  half = z sqrt(n) / (n + z^2) * sqrt(p(1-p) + z^2 / (4n)),
    p = k / n. Returns floats for scalar inputs, numpy arrays otherwise; n = 0 gives (0, 1).
    """
    k = np.asarray(successes, dtype=float)
    m = np.asarray(n, dtype=float)
    if np.any(m < 0) or np.any(k < 0) or np.any(k > m):
        raise ValueError("need 0 <= successes <= n")
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(m > 0, k / np.where(m > 0, m, 1), 0.0)
        denom = m + z * z
        center = (k + z * z / 2) / denom
        half = z * np.sqrt(m) / denom * np.sqrt(p * (1 - p) + z * z / (4 * np.where(m > 0, m, 1)))
        low = np.where(m > 0, np.clip(center - half, 0.0, 1.0), 0.0)
        high = np.where(m > 0, np.clip(center + half, 0.0, 1.0), 1.0)
    # exact endpoints at the boundaries (the formula gives them up to rounding)
    low = np.where(k == 0, 0.0, low)
    high = np.where((k == m) & (m > 0), 1.0, high)
    if low.ndim == 0:
        return float(low), float(high)
    return low, high


def bootstrap_mean_ci(values, n_boot: int = 1000, seed: int = 0):
    """(mean, low, high): 95% percentile bootstrap interval of the mean of `values` (resampled with
    replacement, `n_boot` times, numpy Generator seeded with `seed`)."""
    x = np.asarray(values, dtype=float).ravel()
    if x.size == 0:
        raise ValueError("bootstrap_mean_ci needs at least one value")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, x.size, size=(n_boot, x.size))
    means = x[idx].mean(axis=1)
    low, high = np.quantile(means, QUANTILES)
    return float(x.mean()), float(low), float(high)


def crossed_bootstrap_ci(values, n_boot: int = 1000, seed: int = 0) -> tuple[float, float, float]:
    """(mean, low, high), a 95% interval, of the grand mean of a seeds x prompts matrix `values`
    (S, P), with a percentile bootstrap that resamples seeds and prompts independently, both with
    replacement (a crossed two-way design: the same prompts are evaluated under every training
    seed). The
    interval covers seed-to-seed and prompt-to-prompt variation; with one seed it is the bootstrap
    over prompts (bootstrap_mean_ci with the same resampled prompts)."""
    x = np.asarray(values, dtype=float)
    means = crossed_bootstrap_means([x], n_boot, seed)[0]
    low, high = np.quantile(means, QUANTILES)
    return float(x.mean()), float(low), float(high)


def crossed_bootstrap_means(matrices, n_boot: int = 1000, seed: int = 0) -> np.ndarray:
    """(len(matrices), n_boot) grand means of seeds x prompts matrices of one shape, each draw
    resampling seeds and prompts with replacement, the same draw for every matrix (so a statistic
    of several means, such as a ratio, is bootstrapped jointly): crossed_bootstrap_ci's draws."""
    xs = [np.asarray(m, dtype=float) for m in matrices]
    if any(x.ndim != 2 or x.size == 0 or x.shape != xs[0].shape for x in xs):
        raise ValueError("crossed bootstrap needs non-empty (seeds, prompts) matrices of one shape")
    s, p = xs[0].shape
    rng = np.random.default_rng(seed)
    means = np.empty((len(xs), n_boot))
    for b in range(n_boot):
        rows = rng.integers(0, s, size=s) if s > 1 else np.zeros(1, int)
        cols = rng.integers(0, p, size=p)
        for i, x in enumerate(xs):
            means[i, b] = x[np.ix_(rows, cols)].mean()
    return means


def pass_at_k(n, c, k: int) -> np.ndarray:
    """Unbiased pass@k per prompt: 1 - C(n - c, k) / C(n, k) (n samples, c successes; k <= n),
    as the product prod_{i = n - c + 1}^{n} (1 - k / i), which never forms a binomial."""
    n, c = np.asarray(n, int), np.asarray(c, int)
    if np.any(k > n) or k < 1:
        raise ValueError(f"pass@k needs 1 <= k <= n, got k = {k}, n = {n.min()}..{n.max()}")
    out = np.empty(n.shape, float)
    for i, (ni, ci) in enumerate(zip(n.ravel(), c.ravel())):
        out.flat[i] = (
            1.0 if ni - ci < k else 1.0 - np.prod(1.0 - k / np.arange(ni - ci + 1, ni + 1))
        )
    return out


def derive_seed(*parts) -> int:
    """A 63-bit seed from any JSON-serialisable parts, e.g. derive_seed(0, "grpo", 60, "test", "test_00001").

    sha256 of the JSON list of the parts: stable across processes and Python versions (unlike hash())."""
    blob = json.dumps(list(parts), sort_keys=True, default=str, separators=(",", ":")).encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:8], "big") & (2**63 - 1)
