"""Rule fixed_point_pool (stage fixed_point): the first fixed_point.n_prompts prompts of the
training pool (grpo_repro.data.sets)."""

from grpo_repro import io
from grpo_repro.data.sets import read_prompts


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    records = read_prompts(sm.input.pool)[: sm.params.n]
    io.write_jsonl(sm.output.pool, records)
    print(f"{len(records)} prompts")


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
