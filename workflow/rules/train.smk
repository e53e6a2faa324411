"""Stage 3: prompts, the reference policy pi_ref and GRPO training of every variant (Sec. 6).

prepare_data -> train_reference (organism only: SFT of the small Qwen2 on worked solutions)
-> train_grpo (one job per variant; TRL GRPOTrainer; checkpoints every train.save_steps steps).
"""


rule prepare_data:
    output:
        train=f"{RESULTS}/data/train.jsonl",
        test=f"{RESULTS}/data/test.jsonl",
        pool=f"{RESULTS}/data/train_pool.jsonl",
        tokenizer=directory(f"{RESULTS}/data/tokenizer"),
    log:
        f"{LOGS}/train/prepare_data.log",
    benchmark:
        f"{BENCH}/train/prepare_data.tsv"
    params:  # the settings this job reads: a change reruns it (and what depends on it)
        settings={k: config[k] for k in ("seed", "data", "prompt", "organism", "model")},
    threads: 1
    script:
        "../scripts/prepare_data.py"


rule train_reference:
    input:
        train=rules.prepare_data.output.train,
        tokenizer=rules.prepare_data.output.tokenizer,
    output:
        model=directory(f"{RESULTS}/models/ref"),
        log_csv=f"{RESULTS}/models/ref_sft_log.csv",
        run=f"{RESULTS}/models/ref_run.json",
    log:
        f"{LOGS}/train/train_reference.log",
    benchmark:
        f"{BENCH}/train/train_reference.tsv"
    params:  # the settings this job reads: a change reruns it
        settings={k: config[k] for k in ("seed", "organism")},
    threads: 2
    script:
        "../scripts/train_reference.py"


rule train_grpo:
    input:
        ref=ref_model_input(),
        prompts=grpo_prompts_file(),
    output:
        run=f"{RESULTS}/train/{{variant}}/run.json",
        log_csv=f"{RESULTS}/train/{{variant}}/train_log.csv",
    log:
        f"{LOGS}/train/grpo_{{variant}}.log",
    benchmark:
        f"{BENCH}/train/grpo_{{variant}}.tsv"
    threads: 1
    params:
        ref=REF_MODEL,
        n_epoch=N_EPOCH_PROMPTS,
        config_json=shell_quote(TRAIN_CONFIG),  # only what training reads: plot settings never retrain
    shell:
        "{TRAIN_LAUNCHER} {TRAIN_SCRIPT}"  # globals, not params: moving the repo or venv never retrains
        " --variant {wildcards.variant} --ref {params.ref} --prompts {input.prompts}"
        " --n-epoch-prompts {params.n_epoch} --out {RESULTS}/train/{wildcards.variant}"
        " --threads {threads} --config-json {params.config_json} --run {output.run} > {log} 2>&1"
