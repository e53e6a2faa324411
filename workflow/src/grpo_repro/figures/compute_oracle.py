"""Data of the finite-policy oracle figures (beyond the paper): exact Gibbs iterates on softmax
policies (Thm 8, Lemma 2-3, Thm 9) checked against the scalar recurrences and an independent
optimiser, and sample-based GRPO against the exact iterates (App. F, Thm 10)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from grpo_repro import variants as reg
from grpo_repro.dynamics import oracle as orc
from grpo_repro.dynamics import oracle_sgd as osg


def _oracle_runs(cfg: dict):
    """(variant, alpha) pairs of the oracle, in registry order (grpo_repro.variants): the one-anchor
    variants, then the two-KL ones at every alpha."""
    runs = [(v.name, np.nan) for v in reg.VARIANTS if not v.two_kl]
    two_kl = [v.name for v in reg.VARIANTS if v.two_kl]
    return runs + [(v, float(a)) for v in two_kl for a in cfg["two_kl_alpha"]]


def _delta_r_check(prob, ex, log_pi0, variant, alpha, init) -> dict:
    """Delta_R of the two-KL runs (Thm 9): exactly 0 from pi_0 = pi_ref (the iterates keep pi_ref's
    conditionals on S and F; tol 1e-12), and from a perturbed pi_0 bounded by (1-alpha)^n M0,
    M0 = max over S and F of the oscillation of log(pi_0/pi_ref) (on S, log(pi_n/pi_ref) =
    (1-alpha)^n log(pi_0/pi_ref) + const and 0 <= D_alpha <= max log-ratio <= oscillation): the
    value is max_n (|Delta_R,n| - 1e-12)_+ / ((1-alpha)^n M0) (1e-12: rounding floor), tol 1."""
    base = dict(variant=variant, alpha=alpha, init=init)
    dr = np.abs(ex["delta_r"][:, prob.kind == "random"])
    if log_pi0 is None:
        return dict(base, check="delta_r_max_abs", value=float(dr.max()), tol=1e-12)
    u = (log_pi0 - prob.log_pi_ref)[prob.kind == "random"]
    succ = prob.reward[prob.kind == "random"] > 0.5

    def osc(mask):
        hi = np.where(mask, u, -np.inf).max(axis=1)
        lo = np.where(mask, u, np.inf).min(axis=1)
        return hi - lo

    m0 = np.maximum(osc(succ), osc(~succ))
    n = np.arange(1, dr.shape[0] + 1)[:, None]
    ratio = np.maximum(dr - 1e-12, 0) / np.maximum((1 - alpha) ** n * m0[None], 1e-300)
    return dict(base, check="delta_r_decay_bound", value=float(ratio.max()), tol=1.0)


def oracle_exact(cfg: dict) -> dict:
    """Closed-form iterates of every variant on a random finite problem (pi_0 = pi_ref and a
    perturbed pi_0): their PoS against the scalar recurrence (Delta_R from the actual
    conditionals), and an independent Newton optimiser's iterates against the closed form."""
    oc = cfg["oracle"]
    prob = orc.make_problem(
        int(oc["n_prompts"]), int(oc["n_outcomes"]), int(oc["seed"]), float(oc["logit_scale"])
    )
    beta, eps = float(oc["beta"]), float(oc["smoothing_eps"])
    n_iter, n_opt = int(oc["n_iter"]), int(oc["n_iter_optimiser"])
    inits = {"ref": None, "perturbed": orc.perturbed_policy(prob, int(oc["seed"]) + 1)}
    rows, checks = [], []
    q = prob.shape[0]
    for variant, alpha in _oracle_runs(cfg):
        a = None if np.isnan(alpha) else alpha
        for init, lp0 in inits.items():
            ex = orc.exact_iterations(prob, variant, beta, eps, n_iter, alpha=a, log_pi0=lp0)
            p0 = None if lp0 is None else orc.pos(lp0, prob.reward)
            sc = orc.scalar_pos(
                prob, variant, beta, eps, n_iter, alpha=a, p0=p0, delta_r_seq=ex["delta_r"]
            )
            opt = orc.optimiser_iterations(prob, variant, beta, eps, n_opt, alpha=a, log_pi0=lp0)
            l1 = np.full((n_iter + 1, q), np.nan)
            l1[: n_opt + 1] = orc.l1_distance(opt, ex["log_pi"][: n_opt + 1])
            dr = np.vstack([np.full((1, q), np.nan), ex["delta_r"]])
            nn = np.repeat(np.arange(n_iter + 1), q)
            rows.append(
                pd.DataFrame(
                    dict(
                        variant=variant,
                        alpha=alpha,
                        init=init,
                        beta=beta,
                        eps=eps,
                        prompt=np.tile(np.arange(q), n_iter + 1),
                        kind=np.tile(prob.kind, n_iter + 1),
                        p_ref=np.tile(prob.p_ref, n_iter + 1),
                        n=nn,
                        p_closed=ex["p"].ravel(),
                        p_scalar=sc.ravel(),
                        abs_err=np.abs(ex["p"] - sc).ravel(),
                        delta_r=dr.ravel(),
                        l1_optimiser=l1.ravel(),
                    )
                )
            )
            zero = prob.kind == "zero"
            one = prob.kind == "one"
            measured = {  # check: (value, tol)
                "pos_vs_scalar_max_abs": (float(np.max(np.abs(ex["p"] - sc))), 1e-12),
                "optimiser_l1_max": (float(np.nanmax(l1)), 1e-5),
                "p_ref0_absorbing_max": (
                    float(np.max(ex["p"][:, zero])) if zero.any() else 0.0,
                    0.0,
                ),
                "p_ref1_stays_max_dev": (
                    float(np.max(1 - ex["p"][:, one])) if one.any() else 0.0,
                    1e-12,
                ),
            }
            checks += [
                dict(variant=variant, alpha=alpha, init=init, check=c, value=v, tol=t)
                for c, (v, t) in measured.items()
            ]
            if reg.get(variant).two_kl:
                checks.append(_delta_r_check(prob, ex, lp0, variant, alpha, init))
    chk = pd.DataFrame(checks)
    chk["passed"] = chk["value"] <= chk["tol"]
    return {"iterates": pd.concat(rows, ignore_index=True), "checks": chk}


#: the one-factor sweeps of oracle.sgd: factor (config key sweep_<factor>) -> the field it sets
SWEEPS = {"group_size": "G", "mu": "mu", "clip_eps": "clip_eps", "kl": "kl"}


def sgd_settings(cfg: dict) -> list[tuple[str, osg.SGDSettings]]:
    """Baseline sample-based GRPO settings and one-factor-at-a-time variations (factor, settings)."""
    oc, sc = cfg["oracle"], cfg["oracle"]["sgd"]
    base = osg.SGDSettings(
        variant=sc["variant"],
        beta=float(oc["beta"]),
        smoothing_eps=float(oc["smoothing_eps"]),
        G=int(sc["group_size"]),
        mu=int(sc["mu"]),
        lr=float(sc["lr"]),
        clip_eps=sc["clip_eps"],
        kl=sc["kl"],
        optimizer=sc["optimizer"],
        n_iter=int(oc["n_iter"]),
    )
    out = [("baseline", base)]
    for factor, field in SWEEPS.items():
        for v in sc[f"sweep_{factor}"]:
            v = int(v) if field in ("G", "mu") else v  # counts
            if v != getattr(base, field):
                out.append((factor, replace(base, **{field: v})))
    return out


def oracle_sgd(cfg: dict) -> dict:
    """Sample-based GRPO vs the exact iterates (Thm 10, grpo_repro.dynamics.oracle): per setting, seed
    and iteration (summary) the mean / max over the random prompts of TV and |p~ - p|, the event
    lemma, delta*_n (sum of one-step errors), the shares of prompts with delta*_n >= 1, with a
    violated step condition and with the assumption holding, 2 delta*_n averaged over the prompts
    where the assumption holds only (NaN if none), |p~ - p*|, degenerate-group and clipped
    fractions; per setting, seed and prompt (thm10) the assumption and the conclusion of Thm 10;
    and per-prompt PoS trajectories of the baseline (first seed)."""
    oc = cfg["oracle"]
    prob = orc.make_problem(
        int(oc["n_prompts"]), int(oc["n_outcomes"]), int(oc["seed"]), float(oc["logit_scale"])
    )
    settings = sgd_settings(cfg)
    exact = {}
    rows, prompts, thm = [], [], []
    seeds = [int(s) for s in oc["sgd"]["seeds"]]
    n = np.arange(int(oc["n_iter"]) + 1)
    random = prob.kind == "random"
    for factor, s in settings:
        key = (s.variant, s.alpha)
        if key not in exact:
            exact[key] = orc.exact_iterations(
                prob, s.variant, s.beta, s.smoothing_eps, s.n_iter, alpha=s.alpha
            )
        ex = exact[key]
        for seed in seeds:
            out = osg.run(prob, replace(s, seed=seed))
            one = orc.one_step_targets(
                prob, out["log_pi"], s.variant, s.beta, s.smoothing_eps, s.alpha
            )
            c = orc.compare(out["log_pi"], ex["log_pi"], prob.reward, one)
            rnd = c["assumption_n"][:, random]
            valid = np.where(rnd, 2 * c["delta_star"][:, random], 0.0)
            mean_bound_valid = np.where(
                rnd.any(1), valid.sum(1) / np.maximum(rnd.sum(1), 1), np.nan
            )  # 2 delta*_n averaged over the prompts where the assumption holds so far
            rows.append(
                pd.DataFrame(
                    dict(
                        factor=factor,
                        variant=s.variant,
                        G=s.G,
                        mu=s.mu,
                        lr=s.lr,
                        clip_eps=np.nan if s.clip_eps is None else s.clip_eps,
                        kl=s.kl,
                        optimizer=s.optimizer,
                        seed=seed,
                        n=n,
                        mean_tv=c["tv"][:, random].mean(1),
                        max_tv=c["tv"][:, random].max(1),
                        mean_gap=c["gap"][:, random].mean(1),
                        max_gap=c["gap"][:, random].max(1),
                        event_bound_holds=np.all(c["event_ok"], axis=1),
                        mean_delta_star=c["delta_star"][:, random].mean(1),
                        share_delta_star_ge1=(c["delta_star"][:, random] >= 1).mean(1),
                        share_step_violated=1
                        - np.r_[1.0, np.cumprod(c["step_ok"][:, random], 0).mean(1)],
                        share_assumption_holds=rnd.mean(1),
                        mean_bound_valid=mean_bound_valid,
                        mean_gap_to_pstar=c["gap_to_pstar"][:, random].mean(1),
                        frac_degenerate=np.r_[np.nan, out["frac_degenerate"]],
                        clip_frac=np.r_[np.nan, out["clip_frac"]],
                        mean_p_sgd=c["p_sgd"][:, random].mean(1),
                        mean_p_exact=c["p_exact"][:, random].mean(1),
                        control_p0_max=c["p_sgd"][:, prob.kind == "zero"].max(1),
                    )
                )
            )
            thm.append(
                pd.DataFrame(
                    dict(
                        factor=factor,
                        G=s.G,
                        mu=s.mu,
                        clip_eps=np.nan if s.clip_eps is None else s.clip_eps,
                        kl=s.kl,
                        seed=seed,
                        prompt=np.arange(prob.shape[0])[random],
                        p_ref=prob.p_ref[random],
                        p_star=c["p_star"][random],
                        exact_converged=c["exact_converged"][random],
                        delta_star=c["delta_star"][-1, random],
                        max_step_violation=c["step_violation"][:, random].max(0),
                        step_condition_holds=c["step_ok"][:, random].all(0),
                        assumption_holds=c["assumption_holds"][random],
                        tail_gap=c["tail_gap"][random],
                        bound=c["bound"][random],
                        bound_applies=c["bound_applies"][random],
                        conclusion_holds=c["conclusion_holds"][random],
                    )
                )
            )
            if factor == "baseline" and seed == seeds[0]:
                q = prob.shape[0]
                prompts.append(
                    pd.DataFrame(
                        dict(
                            prompt=np.tile(np.arange(q), len(n)),
                            kind=np.tile(prob.kind, len(n)),
                            p_ref=np.tile(prob.p_ref, len(n)),
                            n=np.repeat(n, q),
                            p_sgd=c["p_sgd"].ravel(),
                            p_exact=c["p_exact"].ravel(),
                            tv=c["tv"].ravel(),
                        )
                    )
                )
    return {
        "summary": pd.concat(rows, ignore_index=True),
        "prompts": pd.concat(prompts, ignore_index=True),
        "thm10": pd.concat(thm, ignore_index=True),
    }
