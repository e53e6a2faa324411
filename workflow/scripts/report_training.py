"""Rule report_training (stage report): the training curves' data from every run's TRL log
(grpo_repro.report.tables)."""

from grpo_repro import io
from grpo_repro.report.tables import training_frame


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    frame = training_frame(dict(zip(sm.params.runs, sm.input.logs)))
    io.write_csv(sm.output.csv, frame)
    print(frame.groupby(["variant", "metric"])["value"].describe().to_string())


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
