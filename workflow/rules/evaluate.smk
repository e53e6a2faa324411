# Stage 4: evaluation of every checkpoint (Sec. 6): eval.samples samples per prompt on every split
# of eval.splits (test: held-out problems, train: the fixed training pool), per-prompt success
# counts with Wilson intervals (strict and lenient answer extraction).
#
# One job per (variant, step) writes all splits. Step 0 (pi_ref) is evaluated once, as variant
# `ref` (results/eval/ref/{split}/step_0.*), and shared by every variant.
# Needs from common.smk: VARIANTS, STEPS, RESULTS, LOGS, BENCH, checkpoint_dir(variant, step),
# train_done(variant), ref_model_input().

from snakemake.exceptions import WorkflowError

EVAL_SPLIT_DATA = {"test": f"{RESULTS}/data/test.jsonl", "train": f"{RESULTS}/data/train_pool.jsonl"}


def eval_table(variant, split, step, ext="csv"):
    return f"{RESULTS}/eval/{variant}/{split}/step_{step}.{ext}"


def eval_targets():
    """Every evaluation table (and its JSON sidecar): ref at step 0, each variant at each step > 0."""
    jobs = [("ref", 0)] + [(v, s) for v in VARIANTS for s in STEPS if int(s) > 0]
    return [eval_table(v, split, s, ext)
            for v, s in jobs for split in config["eval"]["splits"] for ext in ("csv", "json")]


def _eval_model_dir(wildcards):
    step = int(wildcards.step)
    if wildcards.variant == "ref":
        if step != 0:
            raise WorkflowError(f"variant 'ref' (pi_ref) has only step 0, not step {step}")
        return checkpoint_dir(VARIANTS[0], 0)  # step 0 is pi_ref for every variant
    if step == 0:
        raise WorkflowError(f"step 0 is pi_ref: request results/eval/ref/<split>/step_0.csv, "
                            f"not results/eval/{wildcards.variant}/...")
    return checkpoint_dir(wildcards.variant, step)


def _eval_inputs(wildcards):
    model = ref_model_input() if wildcards.variant == "ref" else train_done(wildcards.variant)
    return {"data": [EVAL_SPLIT_DATA[s] for s in config["eval"]["splits"]], "model": model}


rule evaluate_checkpoint:
    input:
        unpack(_eval_inputs),
    output:
        tables=expand(f"{RESULTS}/eval/{{{{variant}}}}/{{split}}/step_{{{{step}}}}.csv",
                      split=config["eval"]["splits"]),
        meta=expand(f"{RESULTS}/eval/{{{{variant}}}}/{{split}}/step_{{{{step}}}}.json",
                    split=config["eval"]["splits"]),
    wildcard_constraints:
        variant="|".join(["ref"] + VARIANTS),
        step=r"\d+",
    params:
        model=_eval_model_dir,
        variant=lambda wildcards: wildcards.variant,
        splits=config["eval"]["splits"],
        data=[EVAL_SPLIT_DATA[s] for s in config["eval"]["splits"]],
        settings={"seed": config["seed"], "eval": config["eval"], "temperature": cfg.eval_temperature(config)},
    log:
        f"{LOGS}/eval/{{variant}}/step_{{step}}.log",
    benchmark:
        f"{BENCH}/eval/{{variant}}_step_{{step}}.tsv"
    threads: 1
    resources:
        mem_mb=3000,
        runtime=30 if config["model"]["name_or_path"] is None else 240,  # minutes (SLURM profile may override)
    script:
        "../scripts/evaluate_checkpoint.py"
