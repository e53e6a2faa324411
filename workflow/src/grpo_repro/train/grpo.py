"""GRPO training with TRL's GRPOTrainer (Sec. 2 objective, Sec. 6 experiment), every hyperparameter
explicit (TRL's defaults drifted from the paper: beta=0, loss_type=dapo).

The trainers (TRL subclasses, imported lazily in build_trainer): grpo_repro.train.trainer
(PaperGRPOTrainer: the paper's eq. (4) advantage, grpo_repro.train.trl_variant.paper_advantage) and
grpo_repro.train.fast (FastGRPOTrainer, config key train.fast_step).

Every function takes one run (grpo_repro.train.run_settings.GRPORun: variant, GRPO seed, train
settings, ...), built once by the rule and handed down unchanged to grpo_repro.train.args.grpo_args.
Checkpoints and resume: grpo_repro.train.checkpoints; the GRPOConfig: grpo_repro.train.args.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

from grpo_repro import io
from grpo_repro.gpus import vllm_platform
from grpo_repro.train.args import grpo_args
from grpo_repro.train.checkpoints import (
    FINAL_LOG,
    bad_checkpoints,
    complete_trl_checkpoint,
    drop_checkpoints_after,
    drop_trl_checkpoints_after,
    make_checkpoint_callback,
    reset_if_changed,
    trl_checkpoint_step,
    write_log,
)
from grpo_repro.train.vllm_colocate import colocated_engine

if TYPE_CHECKING:
    from grpo_repro.train.run_settings import GRPORun


def build_trainer(
    model,
    tokenizer,
    run: GRPORun,
    records: list[dict],
    work_dir: str | Path,
    max_step: int,
    devices: int = 1,
    use_cpu: bool = True,
    reward_fn=None,
    callbacks=(),
    fast: dict | None = None,
    **overrides,
):
    """The GRPO trainer of `run` on `records` as the run configures it: the GRPOConfig of
    grpo_args (plus `overrides`), the reward in data.answer_mode (or `reward_fn`),
    the paper advantage; `model` is put in train mode. fast: None = the project's trainer with
    TRL's step (PaperGRPOTrainer), a dict = FastGRPOTrainer with these options.
    Returns (trainer, GRPOConfig, the extra settings of grpo_args)."""
    from datasets import Dataset
    from trl import GRPOConfig

    from grpo_repro.reward import make_reward_fn

    kwargs, extra = grpo_args(run, work_dir, max_step, devices, use_cpu)
    args = GRPOConfig(**{**kwargs, **overrides})
    data = Dataset.from_dict(
        {"prompt": [r["prompt"] for r in records], "gold": [r["gold"] for r in records]}
    )
    from grpo_repro.train.fast import FastGRPOTrainer  # TRL: only here
    from grpo_repro.train.trainer import PaperGRPOTrainer

    trainer_cls = PaperGRPOTrainer if fast is None else FastGRPOTrainer
    model.train()
    # train.vllm_mode colocate: TRL's engine in the rollout dtype, on vllm.platform (vllm_colocate)
    with colocated_engine(run.sections["train"], vllm_platform(run.sections)):
        trainer = trainer_cls(
            model=model,
            args=args,
            train_dataset=data,
            reward_funcs=[reward_fn or make_reward_fn(run.answer_mode)],
            processing_class=tokenizer,
            callbacks=list(callbacks),
            **({} if fast is None else {"fast_options": fast}),
        )
    trainer.paper_eps = extra["smoothing_eps"]
    trainer.use_logprob_temperature(extra["logprob_temperature"])  # train.logprob_temperature
    if "kl_weights" in extra:  # the two-KL loss (grpo_repro.train.trainer.two_kl_loss); None: TRL's
        trainer.kl_weights = tuple(extra["kl_weights"])
    return trainer, args, extra


def train(
    run: GRPORun,
    ref_path: str,
    records: list[dict],
    out_dir: str | Path,
    steps: list[int],
    devices: int = 1,
    use_cpu: bool = True,
    reward_fn=None,
    callbacks=(),
) -> dict:
    """Run GRPO `run` (its variant, with its GRPO seed) from pi_ref on `records` (prompt, gold).
    Resumes from the newest complete TRL checkpoint written under the same fingerprint (settings,
    prompts, pi_ref's weights, training code, library versions); anything else starts from pi_ref.
    reward_fn: TRL reward function; default the answer checker in mode data.answer_mode.
    callbacks: extra transformers TrainerCallbacks (tests use one to interrupt a run).
    Returns the run summary (settings, the resolved GRPOConfig, resume point, steps)."""
    from accelerate import PartialState

    from grpo_repro.models import load_policy, local_dir

    out_dir = Path(out_dir)
    work_dir, ckpt_dir = out_dir / "work", out_dir / "checkpoints"
    state = PartialState(cpu=use_cpu)
    fp = fingerprint(run, ref_path, steps, records)
    if state.is_main_process:
        reset_if_changed(out_dir, fp)
    state.wait_for_everyone()  # every process sees the same work/ before choosing where to resume
    resume = complete_trl_checkpoint(work_dir, processes=state.num_processes)
    done = trl_checkpoint_step(resume)
    bad = bad_checkpoints(ckpt_dir, [s for s in steps[1:] if s <= done])
    if bad:  # a saved policy was lost or damaged: retrain from the TRL state before it
        resume = complete_trl_checkpoint(work_dir, before=min(bad), processes=state.num_processes)
        done = trl_checkpoint_step(resume)
    if state.is_main_process:
        for s, why in sorted(bad.items()):
            print(f"[train] {ckpt_dir}/step_{s}: {why}; retrained from step {done}", flush=True)
        drop_trl_checkpoints_after(work_dir, done)
        drop_checkpoints_after(ckpt_dir, done)  # a step_N newer than the resumed state is redone
        # the log says where the run starts: a resumed run from its TRL checkpoint, else pi_ref
        when = time.strftime("%Y-%m-%d %H:%M:%S")
        if resume is None:
            print(f"[train] {when}: starting from pi_ref ({ref_path}) at step 0", flush=True)
        else:
            print(f"[train] {when}: resuming from {resume} (step {done})", flush=True)
    state.wait_for_everyone()
    marker_file = local_dir(ref_path) / "organism.json"
    marker = json.loads(marker_file.read_text()) if marker_file.exists() else None
    model, tokenizer = load_policy(ref_path)  # float32 master weights; train.bf16 = bf16 autocast
    trainer, args, extra = build_trainer(
        model,
        tokenizer,
        run,
        records,
        work_dir,
        steps[-1],
        devices=devices,
        use_cpu=use_cpu,
        reward_fn=reward_fn,
        callbacks=[
            make_checkpoint_callback(ckpt_dir, set(steps[1:]), tokenizer, marker),
            *callbacks,
        ],
        fast={} if run.train["fast_step"] else None,
    )
    final_log = work_dir / FINAL_LOG
    if done < steps[-1]:
        trainer.train(resume_from_checkpoint=resume)
        history = trainer.state.log_history
        if trainer.is_world_process_zero():  # the log with TRL's final row, for a later rerun
            io.write_json(final_log, history, sort_keys=False)
    else:  # the run had finished: nothing to train (TRL would take one more step)
        trainer.state = trainer.state.load_from_json(str(Path(resume) / "trainer_state.json"))
        # its whole log; killed between its last checkpoint and the end of train(): the
        # checkpoint's, without TRL's final row (train_loss, train_runtime, total_flos)
        history = io.read_json(final_log) if final_log.exists() else trainer.state.log_history
    trainer.accelerator.wait_for_everyone()
    if trainer.is_world_process_zero():
        write_log(history, out_dir / "train_log.csv")
    missing = [s for s in steps[1:] if not (ckpt_dir / f"step_{s}").exists()]
    if missing:
        raise RuntimeError(f"training finished without checkpoints for steps {missing}")
    return {
        **extra,
        "seed": run.seed,
        "grpo_config": args.to_dict(),  # every field, set or inherited from TRL's defaults
        "fingerprint": fp,
        "resumed_from": resume,
        "steps": steps,
        "global_step": trainer.state.global_step,
    }


def fingerprint(run: GRPORun, ref_path, steps, records) -> dict:
    """What a run's TRL state depends on: a resume is only taken from state written under the same
    fingerprint (settings, prompts, pi_ref's weights, the training code, library versions). The
    run's runtime fields (tracker, server address) are not in it."""
    import hashlib

    from grpo_repro import provenance
    from grpo_repro.codedeps import closure
    from grpo_repro.models import model_hash

    src = Path(__file__).resolve().parents[2]
    code = hashlib.sha256()
    for path in closure(["grpo_repro.train.launch"], src):
        code.update(Path(path).read_bytes())
    prompts = hashlib.sha256(json.dumps([[r["prompt"], r["gold"]] for r in records]).encode())
    ref = str(ref_path)
    return {
        "variant": run.variant,
        "seed": int(run.seed),
        "steps": list(steps),
        "train": run.train,  # no train.seeds (this run: `seed`), no report_to
        "answer_mode": run.answer_mode,
        "prompts_sha256": prompts.hexdigest(),
        "ref": ref,
        "ref_weights_sha256": model_hash(ref),  # a hub spec: its cached snapshot's
        "code_sha256": code.hexdigest(),
        "versions": provenance.versions(),
    }


def run(
    run: GRPORun,
    ref: str,
    prompts_path: str,
    n_epoch_prompts: int,
    out_dir: str,
    run_json: str,
    threads: int = 1,
) -> dict:
    """The rule train_grpo, in each launched process: train `run` on the prompt set
    at `prompts_path` and (rank 0) write the run record run.json (settings, timing, provenance)."""
    import os

    import torch

    from grpo_repro import io, provenance
    from grpo_repro.data.sets import read_prompts
    from grpo_repro.train.run_settings import checkpoint_steps

    devices = int(os.environ.get("WORLD_SIZE", "1"))
    use_cpu = not torch.cuda.is_available()  # also multi-process on CPU: gloo (MULTI_CPU)
    if use_cpu:
        torch.set_num_threads(threads)
    records = read_prompts(prompts_path)
    steps = checkpoint_steps(run.sections["train"], n_epoch_prompts)
    t0 = time.time()
    summary = train(run, ref, records, out_dir, steps, devices=devices, use_cpu=use_cpu)
    summary["seconds"] = time.time() - t0
    summary["seconds_per_step"] = summary["seconds"] / max(1, steps[-1])
    if int(os.environ.get("RANK", "0")) == 0:
        io.write_json(
            run_json,
            {
                "stage": "train_grpo",
                **summary,
                # `config`: the run's settings as the sections they come from (the report's)
                **provenance.record(run.config_record(), inputs=[prompts_path]),
            },
        )
    keys = ("variant", "seed", "steps", "seconds", "seconds_per_step")
    print(json.dumps({k: summary[k] for k in keys}))
    return summary
