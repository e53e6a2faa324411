"""Rule fixed_point_plot (stage fixed_point): the figure, from the stage's CSV files only
(grpo_repro.fixed_point.plots)."""

from grpo_repro import io
from grpo_repro.fixed_point import plots


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    plots.draw(
        {"prompts": sm.input.prompts, "summary": sm.input.summary},
        list(sm.output),
        eps=sm.params.eps,
    )


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
