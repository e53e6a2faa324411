"""The zero-success control (Sec. 3 boundary case p_ref(q) = 0; Sec. 6 "GRPO cannot create
successes"): GRPO on prompts whose sampled rewards are all 0 must leave the policy where it
started.

With every reward of a group 0, the group's advantage is 0 for every variant (eq. 4: (r - p) /
sqrt(p(1 - p) + eps) at r = p = 0; TRL's and Dr. GRPO's centred rewards too), and started at
pi_ref the KL term's gradient vanishes (pi = pi_ref = pi_old: k3 and its ratio-corrected form are
stationary there). So every optimizer step before the first sampled success must leave the weights
bit for bit pi_ref's; a later step may move them (p_ref is bounded by the confirmation, not shown to
be 0, and a sampled success rightly moves the policy). `still_check` is a TrainerCallback (TRL's
public hook) that counts the successes the reward function hands TRL and, after each step taken
with none yet, compares every parameter with pi_ref's; a difference is a leak and stops the run.
"""

from __future__ import annotations

from dataclasses import dataclass


class UpdateLeaked(RuntimeError):
    """An optimizer step moved the policy although no reward so far was a success."""


@dataclass
class SampledSuccesses:
    """A reward function that counts what it hands TRL: the samples scored and their successes
    (reward 1), and the optimizer step at which the first success arrived."""

    reward_fn: object
    samples: int = 0
    successes: int = 0
    first_success_step: int | None = None
    step: int = 0  # the trainer's global step when the reward is computed (set by still_check)

    @property
    def __name__(self) -> str:  # TRL names its reward columns after the reward function
        return getattr(self.reward_fn, "__name__", "reward")

    def __call__(self, *args, **kw):
        rewards = self.reward_fn(*args, **kw)
        hits = sum(float(r) > 0 for r in rewards)
        self.samples += len(rewards)
        self.successes += hits
        if hits and self.first_success_step is None:
            self.first_success_step = self.step + 1  # the step this batch is first used by
        return rewards


def still_check(counter: SampledSuccesses):
    """A TrainerCallback: after each optimizer step taken while `counter` holds no success, every
    parameter must equal, bit for bit, its value when training began (pi_ref's: the run starts at
    step 0, never from a resumed state), else UpdateLeaked (naming the step and the parameter).
    Its `record()` says how many steps were checked."""
    import torch
    from transformers import TrainerCallback

    class StillCheck(TrainerCallback):
        checked: list[int] = []
        start: dict = {}

        def on_train_begin(self, args, state, control, model=None, **kw):
            if state.global_step:
                raise RuntimeError(
                    f"the control resumed at step {state.global_step}: its check needs every step "
                    "from pi_ref"
                )
            self.start = {n: p.detach().clone() for n, p in model.named_parameters()}

        def on_step_begin(self, args, state, control, **kw):
            counter.step = state.global_step  # the step whose batch the reward scores, less one

        def on_step_end(self, args, state, control, model=None, **kw):
            if counter.successes or model is None:
                return
            for name, p in model.named_parameters():
                ref = self.start[name]
                if not torch.equal(p.detach(), ref):
                    diff = (p.detach() - ref).abs().max().item()
                    raise UpdateLeaked(
                        f"step {state.global_step}: parameter {name} moved (max |change| "
                        f"{diff:.3g}) although none of the {counter.samples} rewards sampled so "
                        "far was a success: the update leaked into the policy"
                    )
            self.checked.append(int(state.global_step))

        def record(self) -> dict:
            return {
                "samples": counter.samples,
                "successes": counter.successes,
                "first_success_step": counter.first_success_step,
                "steps_checked_still": len(self.checked),
                "last_step_checked_still": max(self.checked, default=0),
            }

    cb = StillCheck()
    cb.checked, cb.start = [], {}
    return cb
