"""Rule report_temperature (stage report, Thm 1 vs sharpening): success against the sampling
temperature per problem class, each variant's best temperature against pi_ref's best, pass@k
(grpo_repro.report.temperature)."""

from grpo_repro import io
from grpo_repro.data.organism import in_misconception_class
from grpo_repro.data.sets import read_prompts
from grpo_repro.report import temperature as tp


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    n_boot, seed = sm.params.n_bootstrap, sm.params.seed
    classes = {}
    for split, path in zip(sm.params.splits, sm.input.data):
        records = read_prompts(path)
        if records and "ops" in records[0]:  # the organism's problems carry their steps
            classes[split] = {r["prompt_id"] for r in records if in_misconception_class(r)}
    long = tp.load(sm.params.entries, classes)
    curve = tp.temperature_curve(long, n_boot, seed)
    io.write_csv(sm.output.curve, curve)
    io.write_csv(sm.output.best, tp.best_vs_best(long, curve, sm.params.headline, n_boot, seed))
    io.write_csv(sm.output.pass_k, tp.pass_at_k(long, n_boot, seed))


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
