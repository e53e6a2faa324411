"""Stage data (Sec. 6): the prompt sets. The organism's generated GSM8K-format problems or GSM8K
(hub or local JSONL), rendered with the model's tokenizer: for a model the pipeline builds, the
organism's word-level one or a byte-level BPE with Qwen2.5's chat template trained on the training
split (organism.tokenizer); every record carries its rendered prompt
(grpo_repro.data.prepare).
"""


rule data_prepare:
    """The prompt sets (JSONL: train, val, test, the training pool, the organism's SFT data), their
    sizes and difficulty mix (splits.json) and the tokenizer that rendered them."""
    input:
        **P.data_inputs(),
        code=code("data_prepare.py"),
    output:
        **{k: directory(v) if k == "tokenizer" else v for k, v in P.data_files().items()},
    log:
        f"{P.logs}/data/data_prepare.log",
    benchmark:
        f"{P.bench}/data/data_prepare.tsv"
    conda:
        P.env
    params:
        settings=settings("seed", "data", "prompt", "organism", "model"),
    script:
        "../scripts/data_prepare.py"
