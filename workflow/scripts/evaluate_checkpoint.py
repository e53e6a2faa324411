"""Snakemake script of rule evaluate_checkpoint: one model (variant, step), every split of
config["eval"]["splits"] -> results/eval/{variant}/{split}/step_{step}.csv + .json.
All the logic lives in grpo_repro.evaluate.run_checkpoint_eval."""

import sys

from grpo_repro.evaluate import run_checkpoint_eval


def main(smk) -> None:
    splits = list(smk.params.splits)
    data = dict(zip(splits, smk.params.data))
    outputs = {s: (csv, js) for s, csv, js in zip(splits, smk.output.tables, smk.output.meta)}
    run_checkpoint_eval(smk.params.model, smk.config, smk.params.variant, int(smk.wildcards.step),
                        data, outputs, threads=smk.threads)


if __name__ == "__main__" or "snakemake" in globals():
    smk = globals()["snakemake"]
    if smk.log:
        with open(smk.log[0], "w") as log:
            sys.stdout = sys.stderr = log
            main(smk)
    else:
        main(smk)
