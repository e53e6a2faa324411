"""Rule report_landing (stage report): the HTML report's landing page from results/summary.json
(grpo_repro.report.landing)."""

from pathlib import Path

from grpo_repro import io
from grpo_repro.report.landing import landing_rst


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    picture, law, zero = (
        Path(sm.input[k]).read_bytes() if sm.input.get(k) else None
        for k in ("picture", "fp_picture", "zero_picture")
    )
    io.write_text(sm.output.rst, landing_rst(io.read_json(sm.input.json), picture, law, zero))


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
