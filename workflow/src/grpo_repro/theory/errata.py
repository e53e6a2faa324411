"""Errata of Sec. 2 (docs/theory.md Sec. 1, "Known defects"): literal readings shown wrong.

Method `exact`: each is shown by an exact rational counterexample. kind = "erratum": passed = True means the literal reading of the paper's text was shown to be
false (by an exact counterexample), as documented; the corrected statements are separate
`claim` records (listed in `related`):
- the first contrastive display writes a conditional expectation E_{o~pi_old, r=1}[.] that drops
  the event mass p_old (corrected: the indicator form, adv.contrastive_form,
  adv.indicator_vs_conditional, adv.clipped_contrastive_numeric);
- the clipping identity swaps the ratio and advantage symbols (corrected: adv.clip_identity).
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from .clipping import f_clip, smax, smin
from .core import Context, Outcome, register

SEC = "Sec. 2"
R = sp.Rational


def _example():
    """Two outcomes (success, failure): pi_old = (1/4, 3/4), pi_theta = (1/2, 1/2), eps = 1/16 so that
    p_old(1-p_old) + eps = 1/4 and w+ = 3/2, w- = 1/2 exactly."""
    p_old, eps = R(1, 4), R(1, 16)
    old, new = (p_old, 1 - p_old), (R(1, 2), R(1, 2))
    s = sp.sqrt(p_old * (1 - p_old) + eps)
    return old, new, (1 - p_old) / s, p_old / s


@register(
    "err.conditional_display",
    "Literal first display: w+ E_{pi_old}[min(ratio,1+c) | r=1] - "
    "w- E_{pi_old}[max(ratio,1-c) | r=0] (conditional expectations, no event mass) equals the GRPO "
    "objective",
    "Sec. 2.2, first contrastive display",
    SEC,
    kind="erratum",
    related=(
        "adv.contrastive_form",
        "adv.indicator_vs_conditional",
        "adv.clipped_contrastive_numeric",
    ),
)
def conditional_display(ctx: Context) -> Outcome:
    old, new, wp, wm = _example()
    c = R(1, 5)
    ratio = [b / a for a, b in zip(old, new)]
    exact = old[0] * f_clip(ratio[0], wp, c) + old[1] * f_clip(ratio[1], -wm, c)
    indicator = wp * old[0] * smin(ratio[0], 1 + c) - wm * old[1] * smax(ratio[1], 1 - c)
    literal = wp * smin(ratio[0], 1 + c) - wm * smax(
        ratio[1], 1 - c
    )  # E[. | r] on one-point events
    un_exact = wp * new[0] - wm * new[1]
    un_literal = wp * new[0] / old[0] - wm * new[1] / old[1]
    shown = sp.nsimplify(exact - indicator) == 0 and exact != literal and un_exact != un_literal
    return Outcome(
        shown,
        "exact",
        "the literal conditional reading is WRONG, as documented: exact "
        f"counterexample pi_old = (1/4, 3/4), pi_theta = (1/2, 1/2), eps = 1/16, clip_eps = 1/5: "
        f"objective E_old f(ratio, A) = {exact} = indicator form {indicator}, but the conditional "
        f"display gives {literal}; without clipping {un_exact} vs {un_literal}. The two terms "
        "are rescaled by 1/p_old and 1/(1-p_old), so the literal objective is not even a multiple "
        "of the true one",
    )


@register(
    "err.swapped_clip_symbols",
    "Literal clipping identity with the ratio x and the advantage y swapped: "
    "f(x,y) = x min(y, 1+c) if x > 0 (x max(y, 1-c) if x < 0)",
    "Sec. 2.2, clipping identity",
    SEC,
    kind="erratum",
    related=("adv.clip_identity", "adv.clip_identity_numeric"),
)
def swapped_clip_symbols(ctx: Context) -> Outcome:
    x, y, c = R(2), R(1), R(1, 5)
    true = f_clip(x, y, c)
    swapped = x * (smin(y, 1 + c) if x > 0 else smax(y, 1 - c))
    corrected = y * (smin(x, 1 + c) if y > 0 else smax(x, 1 - c))
    rng, n = ctx.rng, ctx.n_random
    xs, ys, cs = np.exp(rng.uniform(-3, 3, n)), rng.normal(0, 2, n), rng.uniform(0.05, 0.5, n)
    fv = np.minimum(xs * ys, np.clip(xs, 1 - cs, 1 + cs) * ys)
    sw = xs * np.minimum(ys, 1 + cs)  # ratios are > 0
    frac = float(np.mean(np.abs(fv - sw) > ctx.tol * np.maximum(1, np.abs(fv))))
    shown = swapped != true and corrected == true
    return Outcome(
        shown,
        "exact",
        "the literal (swapped) reading is WRONG, as documented: exact counterexample "
        f"ratio x = 2, advantage y = 1, clip_eps = 1/5: f = min(xy, clip(x) y) = {true}, swapped "
        f"x min(y, 1+c) = {swapped}, corrected y min(x, 1+c) = {corrected}; the swapped form also "
        f"fails at {frac:.0%} of {n} random points",
    )
