"""Rule data_prepare (stage data, Sec. 6): train, test and training-pool prompt sets and their
tokenizer (grpo_repro.data.prepare)."""

from grpo_repro import io
from grpo_repro.data.prepare import prepare


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    prepare(sm.params.settings, dict(sm.output.items()))


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
