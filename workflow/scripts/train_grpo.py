"""Rules train_grpo, fixed_point_train (stage train, Sec. 6): GRPO of one variant with TRL, in this
process or under `accelerate launch` over train.devices processes (grpo_repro.train.launch), on
the job's own GPUs (grpo_repro.gpus.acquire: the rule's `gpu` resource, none on a CPU)."""

from pathlib import Path

from grpo_repro import gpus, io
from grpo_repro.preflight import check_device
from grpo_repro.train.launch import launch


def main(sm) -> None:
    io.log_to(sm.log[0])
    # the run's record (grpo_repro.runs: its table, looked up by the rule)
    variant, seed = sm.params.variant, int(sm.params.seed)
    # results/train/{run}: checkpoints/, work/
    out_dir = str(Path(sm.output.run).parent)
    n = gpus.requested(sm.resources)
    gpus.require(n, gpus.job_gpus(sm.params.settings, "train"))
    with gpus.acquire(n) as ids:  # sets CUDA_VISIBLE_DEVICES
        # CUDA/bf16/vLLM on the job's devices, before any model loads
        check_device({k: v for k, v in sm.params.settings.items() if k in ("train", "vllm")})
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
            gpu_ids=ids,
            report_to=sm.resources.get("report_to", "none"),  # train.report_to (speed only)
        )


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
