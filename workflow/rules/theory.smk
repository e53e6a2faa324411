"""Stage theory: symbolic (sympy) and numeric checks of the derivations of Mroueh (arXiv 2503.06639),
Sec. 2-5 and App. B-F: whitening and the weighted contrastive form (Sec. 2), the Gibbs optimal
policy (Thm 1, 8), the PoS map h, amplification and stability B (Sec. 3, Thm 2-3, 6), Mirror / Dr. /
Mirror Dr. GRPO (Sec. 4-5), two KL terms (Lemma 2-3, Thm 9), the TV step of Thm 10 (App. F), and
the errata of Sec. 2-3, the finite group size of docs/theory.md Sec. 8 (Omega_G, p*_G, at
train.smoothing_eps), and the product's own code (grpo_repro.dynamics: maps, fixed points and
2-cycles, oracle, clipped surrogate, Thm 10 measurement) at random points, at the edges and against
an independent scan (grpo_repro.theory). Fails, naming the checks in its log, if a claim fails or
crashes or an erratum is not demonstrated.
"""


rule theory_derivations:
    """Sec. 2-5: each claim proven with sympy, shown exactly (rational or certified interval
    arithmetic) or checked at n_random random points; derivations.md says which."""
    input:
        code=code("theory_derivations.py"),
    output:
        json=f"{P.results}/theory/derivations.json",
        md=f"{P.results}/theory/derivations.md",
    log:
        f"{P.logs}/theory/theory_derivations.log",
    benchmark:
        f"{P.bench}/theory/theory_derivations.tsv"
    conda:
        P.env
    params:
        theory=config["theory"],
        smoothing_eps=config["train"]["smoothing_eps"],
    script:
        "../scripts/theory_derivations.py"
