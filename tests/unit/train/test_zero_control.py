"""The zero-success control (Sec. 3 boundary case p_ref = 0, grpo_repro.train.zero_control): GRPO on
prompts whose every sampled reward is 0 leaves the weights bit for bit pi_ref's, for every variant
and both training steps (TRL's and the fast one); a leaking update is caught."""

import pytest
import torch
from safetensors.torch import load_file

from grpo_repro.train.run_settings import grpo_run
from grpo_repro.train.zero_control import SampledSuccesses, UpdateLeaked, still_check
from tests.unit.train.test_train import _short_config


def _never(completions, **kw):
    """The reward of a prompt no sample solves."""
    return [0.0 for _ in completions]


def _control(tiny_policy, default_config, tmp_path, variant, fast, reward=_never, **train):
    from grpo_repro.train.grpo import train as grpo_train

    ref, records = tiny_policy
    config = _short_config(default_config, max_steps=4, save_steps=4, fast_step=fast, **train)
    counter = SampledSuccesses(reward)
    check = still_check(counter)
    grpo_train(
        grpo_run(config, variant, 0), str(ref), records, tmp_path / "run", [0, 4],
        reward_fn=counter, callbacks=[check],
    )  # fmt: skip
    return check.record(), ref


@pytest.mark.parametrize("variant", ["grpo", "mirror", "dr_grpo", "mirror_dr", "two_kl"])
@pytest.mark.parametrize("fast", [True, False])
def test_zero_rewards_leave_the_policy_at_pi_ref(
    tiny_policy, default_config, tmp_path, variant, fast
):
    rec, ref = _control(tiny_policy, default_config, tmp_path, variant, fast)
    assert rec["successes"] == 0 and rec["samples"] > 0
    assert rec["steps_checked_still"] == 4  # every step compared, each equal
    before = load_file(ref / "model.safetensors")
    after = load_file(tmp_path / "run" / "checkpoints" / "step_4" / "model.safetensors")
    assert all(torch.equal(before[k], after[k]) for k in before)


@pytest.mark.parametrize("fast", [True, False])
def test_a_leaking_update_is_caught(tiny_policy, default_config, tmp_path, monkeypatch, fast):
    """A broken advantage (eq. 4 shifted by 0.1: nonzero where every reward is 0) moves the
    weights at the first step, and the control says so, naming the step."""
    from grpo_repro.train import trainer

    good = trainer.paper_advantage
    monkeypatch.setattr(trainer, "paper_advantage", lambda a, g, eps: good(a, g, eps) + 0.1)
    with pytest.raises(UpdateLeaked, match="step 1: parameter .* moved .* none of the 8 rewards"):
        _control(tiny_policy, default_config, tmp_path, "grpo", fast)


def test_successes_are_counted_and_end_the_check(tiny_policy, default_config, tmp_path):
    """A sampled success rightly moves the policy: the check stops at the first one and the
    record says when it came and how many there were."""

    def _first_only(completions, **kw):
        return [1.0] + [0.0] * (len(completions) - 1)

    rec, _ = _control(tiny_policy, default_config, tmp_path, "grpo", True, reward=_first_only)
    assert rec["successes"] == rec["samples"] // 8 and rec["first_success_step"] == 1
    assert rec["steps_checked_still"] == 0


def test_no_zeros_leaves_a_control_record_and_no_run(default_config, tmp_path):
    """pi_ref solved every screened prompt: the rule's script writes its outputs (an empty log,
    a record of 0 prompts) without training, and the study reads them."""
    import importlib.util
    import json
    from types import SimpleNamespace as NS

    from tests.helpers import ROOT

    spec = importlib.util.spec_from_file_location(
        "zero_control_script", ROOT / "workflow/scripts/zero_control.py"
    )
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    (tmp_path / "control.jsonl").write_text("")
    out = {k: str(tmp_path / f) for k, f in
           [("run", "run.json"), ("log_csv", "train_log.csv"), ("control", "control.json")]}  # fmt: skip
    sm = NS(
        log=[str(tmp_path / "log")],
        input=NS(prompts=str(tmp_path / "control.jsonl")),
        output=NS(**out),
        params=NS(
            run=grpo_run(default_config, "grpo", 0).params(), ref="unused", n_epoch_prompts=320
        ),
        resources={},
        threads=1,
    )
    script.main(sm)
    record = json.loads((tmp_path / "control.json").read_text())
    assert record["prompts"] == 0 and record["samples"] == 0 and record["steps"][-1] == 160
    assert (tmp_path / "train_log.csv").read_text() == "step\n"
    assert json.loads((tmp_path / "run.json").read_text())["control"] == record
