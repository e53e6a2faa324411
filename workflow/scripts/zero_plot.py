"""Rule zero_plot (stage zero): the study's figure from its CSVs only
(grpo_repro.report.plot_zero)."""

from grpo_repro import io, zero
from grpo_repro.report import plot_zero


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    plot_zero.draw(
        sm.input.table, sm.input.passk, zero.upper_bound(0, sm.params.samples), list(sm.output)
    )


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
