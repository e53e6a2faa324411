"""The claims of docs/theory.md (Sec. 1-4, 7 and 8) that stage 1 checks, each with the ids of its
checks or why it is not checked, and what stage 1 does not check; both listed in derivations.md
(grpo_repro.theory.cli)."""

from __future__ import annotations

#: what stage 1 does NOT check (listed in derivations.md)
NOT_CHECKED = (
    "Lemma 3 / Thm 9 are proven for K = 4 outcomes (2 successes, 2 failures) and checked "
    "numerically for K in 2..8, not proven for general K; the other finite-outcome identities "
    "likewise hold for the stated K (K-independent arguments, not formalised).",
    "Prop. 1's non-uniqueness, the stable 2-cycle, Thm 6's local convergence and the two-KL "
    "non-monotonicity are certified at stated parameters (method exact), not over parameter "
    "regions; local convergence is also checked numerically at random parameters.",
    "Thm 10: the conclusion follows from the assumption by construction (the chain of "
    "par.limsup_conclusion holds for every sequence), so on sample-based GRPO (figures stage, "
    "oracle_sgd_thm10.csv) it holds wherever the assumption holds; what is measured there is how "
    "often the assumption holds (it often fails, delta* >= 1). Tested here: each step of the "
    "chain, the tightness of the constant, that the assumption can fail (par.tv_can_expand) and "
    "that the product's measurement of delta_n can report it failing (num.thm10_delta). Neural "
    "(non-tabular) policies are not checked.",
    "The experiment of Sec. 6 is not checked here (training and evaluation stages).",
)

#: every claim of docs/theory.md Sec. 1-4, 7 and 8: (section, claim, check ids, or why not checked)
CLAIMS = (
    ("1", "Binary reward: mean p, variance p(1-p)", ("adv.bernoulli_moments",)),
    (
        "1",
        "Smoothed advantage eq. (4): +w+ at r=1, -w- at r=0",
        ("adv.smoothed_values", "num.maps_vs_symbolic"),
    ),
    ("1", "Omega = w+ + w- = 1/sqrt(p(1-p)+eps)", ("adv.omega", "num.maps_vs_symbolic")),
    (
        "1",
        "eps = 0: w+ = sqrt((1-p)/p), w- = sqrt(p/(1-p)) (Fig 1)",
        ("adv.unsmoothed_weights", "num.maps_vs_symbolic"),
    ),
    ("1", "w+ decreases, w- increases in p", ("adv.w_plus_decreasing", "adv.w_minus_increasing")),
    ("1", "p > 1/2 weights failures more, p < 1/2 successes", ("adv.w_minus_exceeds_w_plus",)),
    (
        "1",
        "Clipped weighted contrastive (indicator) form",
        (
            "adv.clip_identity",
            "adv.clip_identity_numeric",
            "adv.clipped_contrastive_numeric",
            "num.clipped_surrogate",
        ),
    ),
    ("1", "No-clip equivalent form w+ P_theta(r=1) - w- P_theta(r=0)", ("adv.contrastive_form",)),
    (
        "1",
        "Defect: the first display's conditional expectation drops the event mass",
        ("err.conditional_display", "adv.indicator_vs_conditional"),
    ),
    ("1", "Defect: the clipping identity swaps ratio and advantage", ("err.swapped_clip_symbols",)),
    (
        "1",
        "Defect: one epsilon names two things",
        "a naming remark, nothing to compute: the code keeps clip_eps and smoothing_eps apart",
    ),
    (
        "2",
        "Thm 8: Gibbs solution pi_o exp(a/beta)/Z is the optimum",
        (
            "gibbs.stationarity",
            "gibbs.concavity",
            "gibbs.variational_identity",
            "gibbs.optimal_numeric",
        ),
    ),
    (
        "2",
        "Thm 8: Z and logit p_n = logit p_o + Omega/beta",
        ("gibbs.pos_logit", "num.oracle_gibbs_step"),
    ),
    ("2", "(a) GRPO (Thm 1): anchor pi_ref", ("gibbs.grpo_map", "rec.h_from_gibbs")),
    (
        "2",
        "(b) Mirror GRPO (Thm 4): anchor pi_{n-1}",
        ("var.mirror_recurrence", "num.recurrences_vs_symbolic"),
    ),
    ("2", "(c) Lemma 2: two KL terms = KL to the geometric-mean anchor", ("var.two_kl_anchor",)),
    (
        "2",
        "(c) Lemma 3 / Thm 9: two-KL log-odds with Delta_R",
        (
            "var.two_kl_logodds",
            "var.two_kl_recurrence",
            "var.two_kl_recurrence_numeric",
            "num.delta_r",
            "num.oracle_gibbs_step",
        ),
    ),
    (
        "2",
        "(c) D_alpha(S) <= D_alpha(F) at every step gives p_n >= p_ref",
        ("var.two_kl_amplification",),
    ),
    ("2", "(c) no monotonicity", ("var.two_kl_not_monotone",)),
    ("2", "(d) Dr. GRPO: w+ = 1-p, w- = p, Omega = 1", ("var.dr_weights",)),
    (
        "3",
        "Thm 2: p_n = h(p_{n-1}), both written forms of h",
        (
            "gibbs.h_two_forms",
            "rec.h_from_gibbs",
            "num.maps_vs_symbolic",
            "num.edges",
            "num.scalar_map",
        ),
    ),
    (
        "3",
        "Prop. 1: h continuous for eps > 0, a fixed point exists",
        (
            "rec.continuity",
            "rec.amplification_numeric",
            "num.fixed_points_vs_symbolic",
            "num.orbits_complete",
        ),
    ),
    (
        "3",
        "Prop. 1: discontinuous at 0 and 1 if eps = 0 (wrong as stated)",
        ("err.prop1_eps_zero",),
    ),
    (
        "3",
        "Prop. 1: fixed point not necessarily unique",
        ("rec.several_fixed_points", "num.orbits_complete"),
    ),
    (
        "3",
        "Prop. 1: h'(p) formula; h decreasing on [0,1/2], increasing on [1/2,1]",
        ("rec.h_prime", "rec.h_shape", "num.maps_vs_symbolic"),
    ),
    (
        "3",
        "Thm 3: every fixed point p* > p_ref",
        ("rec.amplification", "rec.amplification_numeric"),
    ),
    ("3", "Boundaries: p_ref = 0 absorbing, p_ref = 1 gives 1", ("rec.boundaries", "num.edges")),
    ("3", "eps > 0, interior p_ref: h(1) < 1", ("rec.h_at_one", "num.edges")),
    (
        "3",
        "Thm 6 / Lemma 1: local convergence iff |h'(p*)| < 1 iff beta > B(p*)",
        (
            "rec.stability",
            "rec.stability_numeric",
            "rec.local_convergence",
            "rec.local_convergence_numeric",
        ),
    ),
    (
        "3",
        "No global convergence: stable 2-cycles (beta 5, p_ref 0.001, eps 1e-5)",
        ("rec.stable_two_cycle", "num.orbits_complete"),
    ),
    (
        "3",
        "Thm 5: Mirror strictly increasing, no interior fixed point, p_n -> 1, p_ref = 0 absorbing",
        ("var.mirror_increasing", "var.mirror_converges", "num.edges"),
    ),
    ("3", "Dr. GRPO: fixed point reached in one step", ("var.dr_grpo_one_step",)),
    ("3", "Mirror Dr. GRPO: logit p_n = logit p_ref + n/beta", ("var.mirror_dr_arithmetic",)),
    (
        "3",
        "Mean+variance = mean-only with beta_eff = beta sqrt(p(1-p)+eps)",
        ("var.beta_eff", "pred.beta_eff_closed_form"),
    ),
    (
        "3",
        "Two-KL fixed points (mean+variance, mean-only), contraction rate 1-alpha",
        ("var.two_kl_fixed_points", "num.delta_r"),
    ),
    ("4", "|p~_n - p_n| <= 2 TV(pi~_n, pi_n)", ("par.event_tv_bound", "par.event_tv_numeric")),
    (
        "4",
        "Assumption TV_n <= TV_{n-1} + delta_n, sum delta_i -> delta* < 1",
        ("par.tv_accumulation", "par.tv_can_expand", "num.thm10_delta"),
    ),
    ("4", "Thm 10: limsup |p~_n - p*| <= 2 delta*", ("par.limsup_conclusion",)),
    (
        "7",
        "Theory's KL(pi || pi_ref) has the Gibbs policy as regularised optimum",
        ("gibbs.stationarity", "gibbs.variational_identity"),
    ),
    (
        "7",
        "Plain k3 gradient = grad KL(pi_ref || pi) (reverse KL)",
        ("kl.k3_plain_is_reverse", "kl.k3_identities_numeric"),
    ),
    (
        "7",
        "Ratio-corrected k3 gradient = grad KL(pi || pi_ref)",
        ("kl.k3_ratio_is_forward", "kl.k3_identities_numeric"),
    ),
    (
        "7",
        "The plain estimator misses grad KL(pi || pi_ref) (0.08 on an unstated 6-outcome example)",
        ("kl.k3_plain_not_forward", "kl.stationary_points"),
    ),
    (
        "7",
        "Corrected estimator, free policy: stationary points are the fixed points of h",
        ("kl.stationary_points",),
    ),
    (
        "8",
        "Finite group size: w+_G, w-_G are Binomial(G-1, p) averages of the group-whitened advantage",
        ("fg.brute_force_weights",),
    ),
    ("8", "Omega_G -> Omega as G -> infinity", ("fg.omega_limit",)),
    (
        "8",
        "Free policy, theory's KL: stationary points at logit p = logit p_ref + Omega_G(p)/beta",
        ("fg.oracle_stationary",),
    ),
    (
        "8",
        "Dr. GRPO: w+_G = (1-1/G)(1-p), w-_G = (1-1/G) p; logit p*_G = logit p_ref + (1-1/G)/beta",
        ("fg.dr_weights", "fg.dr_law", "fg.oracle_stationary"),
    ),
    (
        "8",
        "Numbers: G = 8: Omega/Omega_G = 1.08, 1.19, 1.43 at p = .5, .8, .9; beta 2, p_ref 0.7: "
        "p* = 1.000, p*_G8 = 0.879",
        "recomputed, not asserted: fg.omega_limit's detail prints the ratios (1.078, 1.187, 1.432); "
        "p*_G8 = 0.8792 in the figures stage's p_star_group.csv",
    ),
)
