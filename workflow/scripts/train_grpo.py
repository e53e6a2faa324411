"""Rule train_grpo (stage train, Sec. 6): GRPO of one variant with TRL, in this process or under
`accelerate launch` over train.devices processes (grpo_repro.train.launch)."""

from pathlib import Path

from grpo_repro import io
from grpo_repro.preflight import check_device
from grpo_repro.train.launch import launch

sm = snakemake
io.log_to(sm.log[0])
# the default runs name variant and seed by wildcards; fixed_point_train's one {run} wildcard
# leaves them to params
named = sm.params if hasattr(sm.params, "variant") else sm.wildcards
variant, seed = named.variant, int(named.seed)
check_device({"train": sm.params.settings["train"]})  # CUDA/bf16/vLLM here, before any model loads
out_dir = str(
    Path(sm.output.run).parent
)  # results/train/{variant}/seed_{seed}: checkpoints/, work/
launch(
    sm.params.settings,
    variant,
    seed,
    sm.params.ref,
    sm.input.prompts,
    sm.params.n_epoch_prompts,
    out_dir,
    sm.output.run,
    sm.threads,
)
