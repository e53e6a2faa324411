"""Rule fixed_point_compare (stage fixed_point, Thm 2-3 at the population and at finite G, Thm 5,
Thm 9): one study's per-prompt plateaus beside p* and p*_G and the baselines, each run's mean
trajectory, its summary per (run, beta) over seeds, and its summary.md (grpo_repro.fixed_point.compare, .aggregate, .markdown; study
factors: with the tabular control)."""

import pandas as pd

from grpo_repro import io
from grpo_repro.fixed_point import aggregate, compare, markdown, runs


def read(path: str) -> pd.DataFrame:
    return pd.read_csv(path, dtype={"prompt_id": str})


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    p = sm.params
    ref = read(sm.input.ref)
    parts, trajectories = [], []
    for run in map(lambda d: runs.Run(**d), p.runs):
        name = run.name
        tables = pd.concat([read(sm.input[f"{name}@{s}"]).assign(step=s) for s in p.steps[name]])
        kl = read(sm.input[f"kl@{name}"])
        parts.append(compare.prompt_table(ref, tables, kl, run, p.eps, run.group_size))
        trajectories.append(compare.trajectory_table(ref, tables, run))
    prompts = pd.concat(parts, ignore_index=True)
    traj = pd.concat(trajectories, ignore_index=True)
    summary = aggregate.summary_table(prompts, p.eps, p.n_bootstrap, p.seed, traj)
    io.write_csv(sm.output.prompts, prompts)
    io.write_csv(sm.output.trajectories, traj)
    io.write_csv(sm.output.summary, summary)
    tab = sm.input.get("tabular")  # study factors only (an empty input otherwise)
    tabular = read(tab) if tab else None
    md = markdown.study_markdown(sm.wildcards.study, summary, prompts, tabular)
    io.write_text(sm.output.md, md)
    print(summary.to_string())


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
