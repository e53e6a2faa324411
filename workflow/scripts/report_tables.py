"""Rule report_tables (stage report, Sec. 6): every evaluation table -> one long CSV (variant, split,
step, prompt_id, ...); pi_ref's step-0 table is repeated under every variant (grpo_repro.report.tables)."""

from grpo_repro import io
from grpo_repro.report import tables


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    long = tables.load_long(sm.params.entries, sm.params.steps)
    io.write_csv(sm.output.long, long)
    print(f"{len(long)} rows from {len(sm.params.entries)} tables")


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
