"""Rule zero_control (stage zero, Sec. 3 boundary case p_ref = 0): the first variant's first-seed
GRPO run, same settings, on the confirmed zeros alone, in one process, with the check that every
step before the first sampled success leaves the weights pi_ref's bit for bit
(grpo_repro.train.zero_control) -> the run's checkpoints, run.json, train_log.csv and control.json
(samples and successes it drew, visits per prompt, steps checked). It never resumes: a rerun
trains from pi_ref again, so that the check covers every step."""

import math
import shutil
from pathlib import Path

from grpo_repro import gpus, io, zero
from grpo_repro.preflight import check_device
from grpo_repro.train.run_settings import GRPORun, checkpoint_steps


def main(sm) -> None:
    io.log_to(sm.log[0], job=sm)
    run = GRPORun.from_params(sm.params.run)
    zeros = zero.read_zeros(sm.input.prompts)
    # the main runs' steps
    steps = checkpoint_steps(run.sections["train"], sm.params.n_epoch_prompts)
    if not zeros:  # pi_ref solved every screened prompt: nothing to train on
        return write(sm, {"prompts": 0, "samples": 0, "successes": 0, "steps": steps}, {})
    # TRL draws whole batches of train.prompts_per_step prompts: fewer zeros are repeated
    records = zeros * math.ceil(run.train["prompts_per_step"] / len(zeros))
    with gpus.acquire(gpus.requested(sm.resources)):
        check_device(run.sections)
        import torch

        from grpo_repro.reward import make_reward_fn
        from grpo_repro.train.grpo import train
        from grpo_repro.train.zero_control import SampledSuccesses, still_check

        torch.set_num_threads(sm.threads)
        counter = SampledSuccesses(make_reward_fn(run.answer_mode))
        check = still_check(counter)
        out = Path(sm.output.run).parent
        # the check sees every step in this process: the control never resumes (a killed one
        # starts again from pi_ref, and gives the same run: its seeds are the run's)
        for d in ("work", "checkpoints"):
            shutil.rmtree(out / d, ignore_errors=True)
        summary = train(
            run, sm.params.ref, records, out, steps, use_cpu=not torch.cuda.is_available(),
            reward_fn=counter, callbacks=[check],
        )  # fmt: skip
    record = {
        **check.record(),
        "prompts": len(zeros),
        "visits_per_prompt": counter.samples / run.train["num_generations"] / len(zeros),
        "steps": steps,
    }
    write(sm, record, summary)


def write(sm, record: dict, summary: dict) -> None:
    """control.json and run.json (a run with no prompts: an empty log, no checkpoints)."""
    if not summary:
        io.write_text(sm.output.log_csv, "step\n")
    io.write_json(sm.output.control, record)
    io.write_json(sm.output.run, {"stage": "zero_control", **summary, "control": record})
    print(f"[zero] control: {record}")


if __name__ == "__main__":  # not in a spawned child, which re-imports this file as __mp_main__
    main(snakemake)
