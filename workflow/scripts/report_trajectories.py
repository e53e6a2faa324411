"""Rule report_trajectories (stage report): per-prompt trajectories of a seeded random choice of
prompts, the paper's Fig 3 (grpo_repro.report.tables.trajectories)."""

from grpo_repro import io
from grpo_repro.report import tables


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    traj = tables.trajectories(tables.read_long(sm.input.long), sm.params.n_prompts, sm.params.seed)
    io.write_csv(sm.output.csv, traj)
    print(traj.groupby("split")["prompt_id"].unique())


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
