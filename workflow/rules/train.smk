"""Stage train (Sec. 6): the reference policy pi_ref and GRPO training of every variant and seed.

train_reference (a model the pipeline builds only: SFT of the organism (a small Llama, docs/organism.md) on worked solutions, or
its random initialisation with organism.sft_steps 0; grpo_repro.train.sft)
-> train_grpo (one job per variant and GRPO seed; TRL GRPOTrainer, grpo_repro.train.grpo; checkpoints every
train.save_steps optimizer steps under results/train/{run}/checkpoints/step_N, run {variant}/seed_{seed}
of grpo_repro.runs).
"""

from grpo_repro import config as cfg
from grpo_repro.gpus import TRAIN_PRIORITY, job_gpus
from grpo_repro.runs import REF, constraint


rule train_reference:
    """The built model's pi_ref: SFT of the organism on the training split's worked solutions
    (organism.sft_steps 0: the random initialisation)."""
    input:
        train=rules.data_prepare.output.get("sft", []),
        tokenizer=rules.data_prepare.output.tokenizer,
        code=code("train_reference.py", variants=()),  # no variant record
    output:
        model=directory(P.tree.ref_model()),
        log_csv=f"{P.tree.train_dir(REF)}/sft_log.csv",
        run=P.tree.run_json(REF),
    log:
        f"{P.logs}/train/train_reference.log",
    benchmark:
        f"{P.bench}/train/train_reference.tsv"
    conda:
        P.env
    threads: 2
    resources:
        gpu=job_gpus(config, "sft"),  # GPUs of the job (grpo_repro.gpus.job_gpus)
    params:
        settings=settings("seed", "organism"),
    script:
        "../scripts/train_reference.py"


rule train_grpo:
    """GRPO of one variant with one GRPO seed (train.seeds) from pi_ref (Sec. 2 objective; variants
    of Sec. 3-5), in one process or under `accelerate launch` over train.devices processes; the
    device it needs (CUDA, bf16, vLLM) is checked first, on the node that runs it
    (grpo_repro.preflight)."""
    input:
        ref=P.ref_input,
        prompts=P.grpo_prompts(),
        code=lambda w: code("train_grpo.py", variants=[P.run_table[w.run].variant]),  # its own record
    output:
        run=P.tree.run_json("{run}"),
        log_csv=P.tree.train_log("{run}"),
    log:
        f"{P.logs}/train/{{run}}.log",
    benchmark:
        f"{P.bench}/train/{{run}}.tsv"
    wildcard_constraints:
        run=constraint(P.runs),
    priority: TRAIN_PRIORITY  # before the 1-GPU jobs ready beside it (grpo_repro.gpus)
    conda:
        P.env
    resources:
        gpu=job_gpus(config, "train"),  # train.devices (+1 for a vLLM server): grpo_repro.gpus.train_gpus
        # experiment tracking changes no result: a resource, not a param, so it reruns nothing
        report_to=cfg.speed_setting(config, "train", "report_to"),
    params:
        # the run's result-relevant settings (grpo_repro.train.run_settings: variant, GRPO seed,
        # train section less seeds and report_to, two_kl_alpha for two-KL runs only): a plain
        # dict, GRPORun.params(), since Snakemake tracks only builtin params (rerun trigger)
        run=lambda w: P.grpo_run(w.run).params(),
        ref=P.ref_model,
        n_epoch_prompts=P.n_epoch_prompts,
    script:
        "../scripts/train_grpo.py"
