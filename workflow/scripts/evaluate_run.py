"""Rules evaluate_reference, evaluate_run, fixed_point_evaluate (stage evaluate, Sec. 6): every
table of one run (grpo_repro.evaluate.tasks) -> results/evaluate/{run}/{split}/step_{N}[_T{t}].csv
+ .json (grpo_repro.evaluate.run), on the job's own GPU (grpo_repro.gpus.acquire: the rule's
`gpu` resource, none on a CPU)."""

from grpo_repro import gpus, io
from grpo_repro.evaluate.job import device_sections, run_eval_job
from grpo_repro.preflight import check_device


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    settings = sm.params.settings
    device = device_sections(settings)
    n = gpus.requested(sm.resources)
    gpus.require(n, gpus.job_gpus(device, "eval"))
    with gpus.acquire(n):  # sets CUDA_VISIBLE_DEVICES
        # the device that train.bf16 and eval.backend (on vllm.platform) need, before any model loads
        check_device(device)
        run_eval_job(
            {int(k): v for k, v in sm.params.models.items()},
            sm.params.tasks,
            settings,
            sm.params.run,
            dict(zip(sm.params.splits, sm.input.data)),
            threads=sm.threads,
            # speed only (config.SPEED_ONLY): a resource, not a param, so a change reruns nothing
            batch_prompts=sm.resources.batch_prompts,
        )


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
