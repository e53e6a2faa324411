"""The paper's TRL, era by era, as settings of the run (docs/gpu.md, "The paper's TRL"): the
temperature of the loss's log-probs (train.logprob_temperature: TRL 1.16 divides the logits by the
sampling temperature, TRL before its #3029 of 2025-03-11 did not), through the project's trainer and
the fast step, for the policy and pi_ref alike; the learning-rate schedule (train.lr_schedule:
transformers' linear decay, which the paper's TRL inherited, or constant)."""

import pytest
import torch

from tests.helpers.fast_fixtures import build, micro_config, save_micro, trl_rows
from tests.helpers.tiny_lm import MICRO_GOLDS, MICRO_PROMPTS
from tests.unit.train.test_fast import random_rows

SAMPLING_T = 0.5  # the sampling temperature of these runs (the paper's is 0.1)


@pytest.fixture(scope="module")
def micro_ref(tmp_path_factory):
    return save_micro(tmp_path_factory.mktemp("micro") / "ref")


def records():
    return [{"prompt": p, "gold": g} for p, g in zip(MICRO_PROMPTS, MICRO_GOLDS, strict=True)]


def direct_logps(model, ids, mask, c, t):
    """log softmax(logits / t) of the last c tokens from one plain forward (no fused head)."""
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask)
    logits = out.logits[:, -c - 1 : -1].float() / t
    lp = torch.log_softmax(logits, -1).gather(-1, ids[:, -c:].unsqueeze(-1)).squeeze(-1)
    return lp * mask[:, -c:]


@pytest.mark.parametrize("fast", [None, {}], ids=["trl_step", "fast_step"])
@pytest.mark.parametrize("logprob_t, expect", [(None, SAMPLING_T), (1.0, 1.0), (2.0, 2.0)])
def test_the_losss_log_probs_are_at_the_log_prob_temperature(micro_ref, fast, logprob_t, expect):
    """Per-token log-probs of the policy (the ratio and clip) and of pi_ref (the KL) equal
    log softmax(logits / t) of a plain forward: t = the sampling temperature (null: TRL 1.16) or
    train.logprob_temperature (1: the paper's TRL); the sampling temperature stays TRL's."""
    config = micro_config(beta=0.1)
    config["train"].update(temperature=SAMPLING_T, logprob_temperature=logprob_t)
    trainer = build(micro_ref, records(), config, fast=fast)
    tok = trainer.processing_class
    ids, mask, cw = trl_rows(tok, random_rows(tok, [0, 1, 2, 0, 3], 5))
    assert trainer.temperature == SAMPLING_T and trainer.loss_temperature == expect
    for model in (trainer.model, trainer.ref_model):
        with torch.no_grad():
            got = trainer._get_per_token_logps_and_entropies(model, ids, mask, cw)[0]
        want = direct_logps(model, ids, mask, cw, expect)
        assert torch.allclose(got * mask[:, -cw:], want, atol=1e-5), (got - want).abs().max()
    if expect != SAMPLING_T:  # the check can fail: TRL's head would give the other numbers
        other = direct_logps(trainer.model, ids, mask, cw, SAMPLING_T)
        assert (other - want).abs().max() > 1e-2


@pytest.mark.parametrize("schedule, middle", [("linear", 0.5), ("constant", 1.0)])
def test_the_learning_rate_at_the_middle_step(micro_ref, schedule, middle):
    """train.lr_schedule reaches TRL's scheduler: linear decay (the paper's TRL, transformers'
    default, no warmup) is at half the rate after half of max_steps; constant stays at it."""
    config = micro_config()
    config["train"]["lr_schedule"] = schedule
    steps, lr = 10, config["train"]["learning_rate"]
    trainer = build(micro_ref, records(), config, steps=steps)
    trainer.create_optimizer_and_scheduler(num_training_steps=steps)
    for _ in range(steps // 2):
        trainer.optimizer.step()
        trainer.lr_scheduler.step()
    assert trainer.lr_scheduler.get_last_lr()[0] == pytest.approx(lr * middle)
