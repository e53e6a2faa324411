"""Mutants of the theory stage's mutation test as slips in the product's source
(tests/unit/theory/test_mutations.py): SOURCE_SLIPS, the eight the default suite runs, and PRODUCT,
further slips in the product's maps."""

from grpo_repro.dynamics import fixed_points as fxp
from grpo_repro.dynamics import maps as dyn
from grpo_repro.dynamics import oracle as orc
from grpo_repro.dynamics import oracle_sgd as sgd
from tests.unit.theory.mutants import _source

#: the eight mutants, as slips in the product's source
SOURCE_SLIPS = [
    (
        "boundary no longer absorbs (logit of p_ref clipped to [1e-12, 1 - 1e-12])",
        _source(
            dyn,
            (
                "logit(np.asarray(p, float))",
                "logit(np.clip(np.asarray(p, float), 1e-12, 1 - 1e-12))",
            ),
        ),
        [],
    ),
    (
        "Delta_R with the wrong sign in step_logit",
        _source(dyn, ("np.asarray(delta_r, float) + incr", "-np.asarray(delta_r, float) + incr")),
        [],
    ),
    (
        "unstable fixed points dropped",
        _source(
            fxp,
            (
                "        out.append(FixedPoint(p, float(x), hp, abs(hp) < 1.0, res))",
                "        if abs(hp) < 1.0:\n            out.append(FixedPoint(p, float(x), hp, True, res))",
            ),
        ),
        [],
    ),
    (
        "2-cycle multiplier h'(a)^2 instead of h'(a) h'(b)",
        _source(
            fxp,
            (
                "dyn.h_prime_logit(a, beta, eps) * dyn.h_prime_logit(b, beta, eps)",
                "dyn.h_prime_logit(a, beta, eps) * dyn.h_prime_logit(a, beta, eps)",
            ),
        ),
        [],
    ),
    (
        "eps = 0 weights swapped",
        _source(
            dyn,
            ("raw = np.sqrt((1 - p) / p)", "raw = np.sqrt(p / (1 - p))"),
            ("raw = np.sqrt(p / (1 - p))", "raw = np.sqrt((1 - p) / p)"),
        ),
        [],
    ),
    (
        "oracle_sgd clipping at 1 + 2c",
        _source(
            sgd,
            (
                "np.clip(ratio, 1 - clip_eps, 1 + clip_eps)",
                "np.clip(ratio, 1 - clip_eps, 1 + 2 * clip_eps)",
            ),
        ),
        [],
    ),
    (
        "oracle Gibbs step with a doubled Omega",
        _source(
            orc,
            ("log_normalise(log_anchor + a / beta)", "log_normalise(log_anchor + 2 * a / beta)"),
        ),
        [],
    ),
    (
        "thm10 delta_n = max(TV_n - TV_{n-1}, 0)",
        _source(
            orc,
            ("delta = tv(log_pi_sgd[1:], one_step)", "delta = np.maximum(t[1:] - t[:-1], 0.0)"),
        ),
        [],
    ),
]

#: further slips in the product's maps
PRODUCT = [
    (
        "_shift no longer keeps +-inf (boundary lost when Omega is infinite)",
        _source(dyn, ("    return np.where(np.isinf(base), base, out)\n", "    return out\n")),
        [],
    ),
    (
        "dOmega/dlogit with the wrong sign",
        _source(dyn, ("return -0.5 * one_minus_2p * v", "return 0.5 * one_minus_2p * v")),
        [],
    ),
    (
        "h_prime with exponent 1/2",
        _source(
            dyn,
            (
                "(2 * np.asarray(beta, float) * (p * (1 - p) + eps) ** 1.5)",
                "(2 * np.asarray(beta, float) * (p * (1 - p) + eps) ** 0.5)",
            ),
        ),
        [],
    ),
    (
        "B without the absolute value",
        _source(
            dyn,
            (
                "out = v * np.abs(2 * p - 1) / (2 * (v + eps) ** 1.5)",
                "out = v * (2 * p - 1) / (2 * (v + eps) ** 1.5)",
            ),
        ),
        [],
    ),
    (
        "two-KL step with alpha and 1 - alpha swapped",
        _source(
            dyn,
            (
                "base = alpha * l_ref + (1 - alpha) * x_prev",
                "base = (1 - alpha) * l_ref + alpha * x_prev",
            ),
        ),
        [],
    ),
    (
        "per-step Delta_R: the first step's value at every step",
        _source(dyn, ("d = dr[n - 1] if per_step else dr", "d = dr[0] if per_step else dr")),
        [],
    ),
    (
        "scalar H with 2 eps",
        _source(
            fxp,
            (
                "return l_ref + 1.0 / (beta * math.sqrt(v + eps))",
                "return l_ref + 1.0 / (beta * math.sqrt(v + 2 * eps))",
            ),
        ),
        [],
    ),
    (
        "fixed-point search bound 1/(2 beta sqrt eps)",
        _source(
            fxp,
            (
                "hi = l_ref + 1.0 / (beta * math.sqrt(eps))",
                "hi = l_ref + 0.5 / (beta * math.sqrt(eps))",
            ),
        ),
        [],
    ),
    (
        "two-KL fixed point derivative alpha + (1 - alpha) h'",
        _source(
            fxp,
            ("d = (1.0 - alpha) + alpha * fp.h_prime", "d = alpha + (1.0 - alpha) * fp.h_prime"),
        ),
        [],
    ),
    (
        "two-KL mean-only fixed point with 1/beta",
        _source(fxp, ("x = shifted + 1.0 / (alpha * beta)", "x = shifted + 1.0 / beta")),
        [],
    ),
    (
        "oracle two-KL anchor with alpha and 1 - alpha swapped",
        _source(
            orc,
            (
                "log_normalise(alpha * log_pi_ref + (1 - alpha) * log_pi_prev)",
                "log_normalise((1 - alpha) * log_pi_ref + alpha * log_pi_prev)",
            ),
        ),
        [],
    ),
    (
        "oracle Renyi divergence divided by 1 - a",
        _source(
            orc,
            (
                "return np.where(empty, np.nan, s / (a - 1))",
                "return np.where(empty, np.nan, s / (1 - a))",
            ),
        ),
        [],
    ),
    (
        "oracle mean-only weights swapped",
        _source(orc, ("        return 1.0 - p, p\n", "        return p, 1.0 - p\n")),
        [],
    ),
    (
        "surrogate gradient through clipped terms",
        _source(sgd, ("active = terms == ratio * adv", "active = np.ones_like(ratio, dtype=bool)")),
        [],
    ),
    (
        "surrogate k3 gradient with the wrong sign",
        _source(sgd, ("kc = (1.0 - np.exp(z)) / g_size", "kc = (np.exp(z) - 1.0) / g_size")),
        [],
    ),
]
