"""Stage 5d: theory overlay: each variant's PoS recurrence (Thm 2, Thm 5, Sec. 5) from every prompt's
measured p_ref, with the run's own beta and eps, beside the measured checkpoints."""

import json
import sys

from grpo_repro.final import overlay, tables

sm = snakemake  # noqa: F821 (injected by Snakemake)
sys.stderr = sys.stdout = open(sm.log[0], "w")
long = tables.read_long(sm.input.long)
runs = {v: json.load(open(p))["config"] for v, p in zip(sm.params.variants, sm.input.runs)}
traj = overlay.overlay_trajectories(long, runs, sm.params.n_epoch_prompts, sm.params.n_prompts, sm.params.seed)
tables.write_csv(traj, sm.output.trajectories)
tables.write_csv(overlay.overlay_curves(runs, sm.params.variants, int(long["checkpoint"].max())), sm.output.curves)
summ = overlay.overlay_summary(traj)
tables.write_csv(summ, sm.output.summary)
print(summ.to_string())
