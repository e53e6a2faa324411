# Stage 1: symbolic derivation checks of Mroueh (arXiv 2503.06639), Sec. 2-5 and App. B-F:
# whitening and the weighted contrastive form (Sec. 2), the Gibbs optimal policy (Thm 1, 8), the
# PoS map h, amplification and stability B (Sec. 3, Thm 2-3, 6), Mirror / Dr. / Mirror Dr. GRPO
# (Sec. 4-5), two KL terms (Lemma 2-3, Thm 9), the TV step of Thm 10 (App. F), and the errata of
# Sec. 2. Config: theory.{n_random, tol, seed}. Fails (naming the checks in the log) if a claim fails.

from glob import glob as _glob


rule theory_derivations:
    """Sec. 2-5: prove each claim with sympy (or check it at n_random random points) -> derivations.json/.md."""
    input:
        sorted(_glob("workflow/src/grpo_repro/theory/*.py")),
    output:
        json=f"{RESULTS}/theory/derivations.json",
        md=f"{RESULTS}/theory/derivations.md",
    params:
        theory=config["theory"],
    log:
        "results/logs/theory/derivations.log",
    benchmark:
        f"{BENCH}/theory/derivations.tsv",
    threads: 1
    script:
        "../scripts/theory_derivations.py"
