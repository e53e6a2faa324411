"""Rule report_amplification (stage report, Thm 3): mean success per step (bootstrap over prompts),
p_ref vs final p per prompt, shares above/on/below the diagonal, paired difference final - p_ref
(grpo_repro.report.amplification)."""

from grpo_repro import io
from grpo_repro.report import amplification as amp
from grpo_repro.report import tables


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    long = tables.read_long(sm.input.long)
    n_boot, seed = sm.params.n_bootstrap, sm.params.seed
    prompts = amp.final_vs_ref(long)
    io.write_csv(sm.output.mean, amp.mean_by_step(long, n_boot, seed))
    io.write_csv(sm.output.prompts, prompts)
    io.write_csv(sm.output.shares, amp.shares(prompts))
    io.write_csv(sm.output.paired, amp.paired_diffs(prompts, n_boot, seed))


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
