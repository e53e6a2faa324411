"""Rule zero_summary (stage zero, Sec. 3 boundary case p_ref = 0, Sec. 6): the study's tables
(grpo_repro.zero): per checkpoint the confirmed zeros' pooled success with its interval and the
prompts that left zero; pass@k of pi_ref and of each run's final checkpoint; zero.json (the
summary's section) and the study's page (grpo_repro.report.zero_text)."""

import pandas as pd

from grpo_repro import io, zero
from grpo_repro.report import zero_text


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    prompts = pd.read_csv(sm.input.prompts)
    measured = pd.read_csv(sm.input.measured)
    zeros = prompts[prompts["zero"]]
    table = zero.checkpoints(measured, zeros)
    finals = {r: int(g["step"].max()) for r, g in measured.groupby("run") if r != "ref"}
    passk = zero.pass_curves(measured, zeros, finals)
    control = {**io.read_json(sm.input.control), "run": sm.params.control}
    s = zero.section(prompts, table, passk, control, sm.params.samples, sm.params.train_visits)
    io.write_csv(sm.output.table, table)
    io.write_csv(sm.output.passk, passk)
    io.write_json(sm.output.json, s)
    title, *body = zero_text.markdown(s)
    md = "\n".join(["# " + title.removeprefix("## "), *body])
    io.write_text(sm.output.md, md)
    print(md)


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
