"""Checkpoints of GRPO training: the policy at every `save_steps` optimizer steps goes to
checkpoints/step_N (evaluation's inputs, atomic rename); TRL's resumable state lives in work/ and an
interrupted run resumes from its newest complete checkpoint, written under the same configuration."""

from __future__ import annotations

import shutil
from pathlib import Path

from grpo_repro import io
from grpo_repro.models import save_policy

TRL_CHECKPOINT_FILES = (
    "trainer_state.json",
    "optimizer.pt",
    "scheduler.pt",
)  # + rng_state[_rank].pth


def complete_trl_checkpoint(work_dir: str | Path) -> str | None:
    """Newest TRL checkpoint in work_dir with all its files (a half-written one is skipped)."""
    cands = sorted(Path(work_dir).glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    for cand in reversed(cands):
        if (
            all((cand / f).exists() for f in TRL_CHECKPOINT_FILES)
            and any(cand.glob("*.safetensors"))
            and any(cand.glob("rng_state*.pth"))
        ):  # rng_state.pth, or rng_state_<rank>.pth per process
            return str(cand)
    return None


def trl_checkpoint_step(checkpoint: str | None) -> int:
    """The optimizer step of a TRL checkpoint directory checkpoint-N (0 for none)."""
    return int(Path(checkpoint).name.split("-")[1]) if checkpoint else 0


def reset_if_changed(out_dir: Path, fingerprint: dict) -> None:
    """Resume only state written under the same fingerprint: when the fingerprint stored in work/
    differs (or is absent), drop work/ and checkpoints/ and start from pi_ref."""
    import hashlib
    import json

    stamp = out_dir / "work" / "fingerprint.json"
    text = json.dumps(fingerprint, indent=1, sort_keys=True, default=str)
    digest = hashlib.sha256(text.encode()).hexdigest()
    old = json.loads(stamp.read_text()).get("sha256") if stamp.exists() else None
    if old != digest:
        for sub in ("work", "checkpoints"):
            shutil.rmtree(out_dir / sub, ignore_errors=True)
    io.write_json(stamp, {"sha256": digest, "fingerprint": fingerprint})


def drop_checkpoints_after(ckpt_dir: Path, step: int) -> None:
    """Remove every checkpoints/step_N with N > step: the run resumes from TRL's state at `step`
    and writes them again (a step_N saved before TRL's checkpoint N completed never survives)."""
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    for d in ckpt_dir.glob("step_*"):
        if d.name.split("_")[1].isdigit() and int(d.name.split("_")[1]) > step:
            shutil.rmtree(d)


def make_checkpoint_callback(ckpt_dir: Path, steps: set[int], tokenizer, marker: dict | None):
    from transformers import TrainerCallback

    class SavePolicy(TrainerCallback):
        """Writes the policy at the configured steps to checkpoints/step_N (evaluation's inputs)."""

        def on_step_end(self, args, state, control, model=None, **kw):
            if state.global_step in steps and state.is_world_process_zero:
                save_policy(model, tokenizer, ckpt_dir / f"step_{state.global_step}", marker)

    return SavePolicy()


def write_log(history: list[dict], path: Path) -> None:
    """Training log as CSV: one row per logged step (reward, KL, loss, clip ratio, ...)."""
    rows = [r for r in history if "step" in r]
    keys = sorted({k for r in rows for k in r})
    front = [k for k in ("step", "reward", "kl", "loss", "clip_ratio/region_mean") if k in keys]
    io.write_rows(path, rows, front + [k for k in keys if k not in front])
