"""Fingerprint of a few GRPO training steps with fixed seeds (the Sec. 2 objective on the micro
policy of tests/helpers/tiny_lm.py): every logged value and every parameter gradient before each
optimizer step, for the fast trainer (all parts, and each part alone) and the project's TRL-path
trainer, grpo / mirror / dr_grpo. A refactor of the trainers must not change any of it:

    python workflow/benchmarks/step_fingerprint.py save before.pt     # on the old code
    python workflow/benchmarks/step_fingerprint.py save after.pt      # on the new code
    python workflow/benchmarks/step_fingerprint.py compare before.pt after.pt

`compare` prints the largest absolute difference of the losses (every logged value) and of the
gradients, and exits 1 when any is not exactly 0.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "workflow" / "src")]

CASES = {  # name: (variant, fast options or None for the TRL path)
    "grpo_fast": ("grpo", {}),
    "grpo_trl": ("grpo", None),
    "mirror_fast": ("mirror", {}),
    "dr_grpo_fast": ("dr_grpo", {}),
    "grpo_fast_logps_only": ("grpo", {"rollouts": "trl", "defer_old_logps": False}),
}


def timing(key: str) -> bool:
    return any(w in key for w in ("runtime", "per_second", "step_time"))


def fingerprint(steps: int = 4) -> dict:
    import torch
    from transformers import TrainerCallback

    from tests.helpers.fast_fixtures import build, micro_config, save_micro
    from tests.helpers.tiny_lm import micro_records

    torch.set_num_threads(1)
    ref = save_micro(Path(tempfile.mkdtemp(prefix="fp_")) / "ref")
    out = {}
    for name, (variant, fast) in CASES.items():
        grads = []

        class Grads(TrainerCallback):
            def on_pre_optimizer_step(self, args, state, control, model=None, **kw):
                grads.append(
                    torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
                )

        torch.manual_seed(0)
        tr = build(
            ref, micro_records(), micro_config(), variant, steps, fast=fast, callbacks=[Grads()]
        )
        tr.train()
        logs = [
            {k: float(v) for k, v in row.items() if isinstance(v, (int, float)) and not timing(k)}
            for row in tr.state.log_history
        ]
        out[name] = {"logs": logs, "grads": torch.stack(grads)}
        print(name, "losses", [round(r.get("loss", float("nan")), 6) for r in logs if "loss" in r])
    return out


def compare(a: dict, b: dict) -> float:
    worst = 0.0
    for name in CASES:
        la, lb = a[name]["logs"], b[name]["logs"]
        assert len(la) == len(lb) and all(x.keys() == y.keys() for x, y in zip(la, lb)), name
        d_log = max(abs(x[k] - y[k]) for x, y in zip(la, lb) for k in x)
        d_grad = float((a[name]["grads"] - b[name]["grads"]).abs().max())
        n = a[name]["grads"].shape
        print(
            f"{name}: max |d logged value| {d_log:.3g}, max |d grad| {d_grad:.3g} "
            f"({n[0]} steps x {n[1]} grads)"
        )
        worst = max(worst, d_log, d_grad)
    return worst


if __name__ == "__main__":
    import torch

    if sys.argv[1] == "save":
        torch.save(fingerprint(), sys.argv[2])
    else:
        worst = compare(torch.load(sys.argv[2]), torch.load(sys.argv[3]))
        print("max difference", worst)
        sys.exit(0 if worst == 0.0 else 1)
