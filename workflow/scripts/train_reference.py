"""Rules train_reference, replicate_reference (stage train, Sec. 6 analogue): the organism's
pi_ref, SFT on worked solutions (grpo_repro.train.sft.run), on the job's own GPU
(grpo_repro.gpus.acquire: the rule's `gpu` resource, none on a CPU)."""

from grpo_repro import gpus, io
from grpo_repro.train import sft


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    s = sm.params.settings
    with gpus.acquire(gpus.requested(sm.resources)):  # sets CUDA_VISIBLE_DEVICES
        sft.run(
            sm.input.train,
            sm.input.tokenizer,
            sm.output.model,
            sm.output.log_csv,
            sm.output.run,
            seed=s["seed"],
            organism=s["organism"],
            threads=sm.threads,
        )


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
