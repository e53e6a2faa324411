"""Rule fixed_point_summary (stage fixed_point): results/fixed_point/summary.md, every study's page
(main, groups, factors) under one title (grpo_repro.fixed_point.markdown.overview)."""

from pathlib import Path

from grpo_repro import io
from grpo_repro.fixed_point import markdown


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    pages = {
        study: Path(path).read_text() for study, path in zip(sm.params.studies, sm.input.pages)
    }
    io.write_text(sm.output.md, markdown.overview(pages))


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
