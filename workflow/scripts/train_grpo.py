"""Rules train_grpo, fixed_point_train, replicate_train (stage train, Sec. 6): GRPO of one run
(grpo_repro.train.run_settings.GRPORun, from the rule's `run` params) with TRL, in this process or
under `accelerate launch` over train.devices processes (grpo_repro.train.launch), on the job's own
GPUs (grpo_repro.gpus.acquire: the rule's `gpu` resource, none on a CPU)."""

from pathlib import Path

from grpo_repro import gpus, io
from grpo_repro.preflight import check_device
from grpo_repro.train.launch import launch
from grpo_repro.train.run_settings import GRPORun


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    # the run (its params, grpo_run(...).params()) and its tracker: train.report_to, a resource
    # (speed only: changing it reruns nothing), a runtime field of the run
    run = GRPORun.from_params(sm.params.run, report_to=sm.resources.get("report_to", "none"))
    # results/train/{run}: checkpoints/, work/
    out_dir = str(Path(sm.output.run).parent)
    n = gpus.requested(sm.resources)
    gpus.require(n, gpus.job_gpus(run.sections, "train"))
    with gpus.acquire(n) as ids:  # sets CUDA_VISIBLE_DEVICES
        # CUDA/bf16/vLLM on the job's devices, before any model loads
        check_device(run.sections)
        launch(
            run,
            sm.params.ref,
            sm.input.prompts,
            sm.params.n_epoch_prompts,
            out_dir,
            sm.output.run,
            sm.threads,
            gpu_ids=ids,
        )


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
