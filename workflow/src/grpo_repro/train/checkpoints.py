"""Checkpoints of GRPO training: the policy at every `save_steps` optimizer steps goes to
checkpoints/step_N (evaluation's inputs, atomic rename); TRL's resumable state lives in work/ and an
interrupted run resumes from its newest complete checkpoint, written under the same configuration."""

from __future__ import annotations

import json
import shutil
import zipfile
from collections.abc import Iterable
from pathlib import Path

from grpo_repro import io
from grpo_repro.models import save_policy

FINAL_LOG = "log_history.json"  # work/: TRL's whole log of a finished run, final row included
TRL_CHECKPOINT_FILES = (
    "trainer_state.json",
    "optimizer.pt",
    "scheduler.pt",
)  # written by rank 0, trainer_state.json last; + one RNG file per process (rng_files)


def trl_checkpoints(work_dir: str | Path) -> list[Path]:
    """TRL's checkpoint-N directories in work_dir, oldest first."""
    cands = [p for p in Path(work_dir).glob("checkpoint-*") if p.name.split("-")[1].isdigit()]
    return sorted(cands, key=lambda p: int(p.name.split("-")[1]))


def rng_files(processes: int) -> list[str]:
    """The RNG files transformers writes into a checkpoint: rng_state.pth for one process, else
    rng_state_<rank>.pth by every rank on its own (unsynchronised with rank 0's trainer_state.json)."""
    return ["rng_state.pth"] if processes <= 1 else [f"rng_state_{r}.pth" for r in range(processes)]


def _whole_archive(path: Path) -> bool:
    """Whether `path` is a whole torch.save archive (a zip whose members all check out): a file cut by
    a kill mid-write fails, so a resume never dies in torch.load."""
    try:
        with zipfile.ZipFile(path) as z:
            return z.testzip() is None
    except (OSError, zipfile.BadZipFile):
        return False


def complete_trl_checkpoint(
    work_dir: str | Path, before: int | None = None, processes: int = 1
) -> str | None:
    """Newest TRL checkpoint in work_dir (at a step < `before` if given) with all its files, a
    readable trainer_state.json and every one of the `processes` ranks' RNG files whole; a
    half-written or damaged one is skipped (a damaged trainer state is said so). A rank's missing RNG
    file would resume that rank with fresh RNG state, and the run would leave its uninterrupted curve."""
    for cand in reversed(trl_checkpoints(work_dir)):
        if before is not None and trl_checkpoint_step(str(cand)) >= before:
            continue
        if not (
            all((cand / f).exists() for f in TRL_CHECKPOINT_FILES)
            and any(cand.glob("*.safetensors"))
            and all(_whole_archive(cand / f) for f in rng_files(processes))
        ):
            continue
        try:
            json.loads((cand / "trainer_state.json").read_text())
        except (OSError, ValueError) as err:
            print(
                f"[train] {cand}/trainer_state.json is damaged ({err}): this TRL checkpoint is "
                "skipped; the run resumes from an earlier state or from pi_ref",
                flush=True,
            )
            continue
        return str(cand)
    return None


def checkpoint_problem(path: str | Path) -> str | None:
    """Why the saved policy at `path` (checkpoints/step_N) cannot be loaded, or None: missing,
    no config.json, no weights, or a weights file whose safetensors header or size is wrong."""
    path = Path(path)
    if not path.is_dir():
        return "missing"
    if not (path / "config.json").is_file():
        return "no config.json"
    weights = sorted(path.glob("*.safetensors"))
    if not weights:
        return "no *.safetensors weights"
    from safetensors import safe_open

    for w in weights:
        try:
            with safe_open(str(w), framework="numpy") as f:
                for name in f.keys():  # noqa: SIM118 (safe_open is not iterable)
                    f.get_slice(name)
        except Exception as err:  # header or buffer damaged, truncated
            return f"{w.name} unreadable ({type(err).__name__}: {err})"
    return None


def bad_checkpoints(ckpt_dir: str | Path, steps: Iterable[int]) -> dict[int, str]:
    """{step: problem} of the checkpoints/step_N among `steps` that cannot be loaded."""
    found = {s: checkpoint_problem(Path(ckpt_dir) / f"step_{s}") for s in steps}
    return {s: why for s, why in found.items() if why}


def recovery_hint(checkpoint: str | Path) -> str:
    """How to recover a missing or corrupt checkpoints/step_N: remove the run's run.json and rerun;
    training (grpo.train) regenerates it, from its last good state (same seeds, same weights)."""
    run_json = Path(checkpoint).parent.parent / "run.json"
    return (
        f"to recover, delete {run_json} and rerun the same snakemake command (with the same "
        "--configfile): training regenerates the checkpoint from its last good state, then "
        "evaluation reruns (README: When something goes wrong)"
    )


def trl_checkpoint_step(checkpoint: str | None) -> int:
    """The optimizer step of a TRL checkpoint directory checkpoint-N (0 for none)."""
    return int(Path(checkpoint).name.split("-")[1]) if checkpoint else 0


def reset_if_changed(out_dir: Path, fingerprint: dict) -> None:
    """Resume only state written under the same fingerprint: when the fingerprint stored in work/
    differs (or is absent), drop work/ and checkpoints/ and start from pi_ref."""
    import hashlib

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


def drop_trl_checkpoints_after(work_dir: Path, step: int) -> None:
    """Remove TRL's checkpoint-N with N > step (a retrain from `step` writes them again)."""
    for cand in trl_checkpoints(work_dir):
        if trl_checkpoint_step(str(cand)) > step:
            shutil.rmtree(cand)


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
