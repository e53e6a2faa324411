"""Rule report_plot_<name> (stage report): one figure (PNG + PDF) or the HTML summary table, drawn
only from the data files of the rule's inputs (grpo_repro.report.registry); `code` is not read."""

from grpo_repro import io
from grpo_repro.report import registry


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    files = {k: v for k, v in sm.input.items() if k != "code"}
    registry.resolve(sm.params.func)(
        files,
        list(sm.output),
        split=sm.wildcards.get("split"),
        variants=sm.params.variants,
        splits=sm.params.splits,
    )
    print(f"{sm.params.func}: wrote {', '.join(sm.output)}")


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
