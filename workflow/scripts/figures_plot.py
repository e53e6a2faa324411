"""Rule figures_plot_<family> (stage figures): draw one figure family (PNG + PDF) from its CSV inputs
with its plot function (grpo_repro.figures.registry); the `code` inputs are not read."""

from grpo_repro import io
from grpo_repro.figures import registry


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    csvs = {k: v for k, v in sm.input.items() if k != "code"}
    registry.resolve(sm.params.func)(csvs, list(sm.output), **dict(sm.params.extra))
    print(f"{sm.params.func}: wrote {', '.join(sm.output)}")


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
