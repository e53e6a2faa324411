"""Rule replicates_summary (named target replicates): every replicate of pi_ref's best-vs-best
comparison side by side (grpo_repro.report.temperature.replicate_table)."""

import pandas as pd

from grpo_repro import io
from grpo_repro.report import temperature as tp


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    frames = {int(s): pd.read_csv(p) for s, p in zip(sm.params.seeds, sm.input.best)}
    table = tp.replicate_table(frames)
    table = table[table["variant"].isin(sm.params.variants)]
    io.write_csv(sm.output.csv, table)
    io.write_text(sm.output.md, tp.replicate_markdown(table))
    print(tp.replicate_markdown(table))


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
