"""Rule report_overlay (stage report): each variant's PoS recurrence (Thm 2, Thm 5, Sec. 5) from every
prompt's measured p_ref, with the run's own beta and eps, beside the measured checkpoints
(grpo_repro.report.overlay)."""

from grpo_repro import io
from grpo_repro.report import overlay, tables


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    long = tables.read_pooled(sm.input.long)  # the mean over GRPO seeds
    runs = {v: io.read_json(p)["config"] for v, p in zip(sm.params.variants, sm.input.runs)}
    traj = overlay.overlay_trajectories(
        long, runs, sm.params.n_epoch_prompts, sm.params.n_prompts, sm.params.seed
    )
    io.write_csv(sm.output.trajectories, traj)
    io.write_csv(
        sm.output.curves,
        overlay.overlay_curves(runs, sm.params.variants, int(long["checkpoint"].max())),
    )
    summ = overlay.overlay_summary(traj)
    io.write_csv(sm.output.summary, summ)
    print(summ.to_string())


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
