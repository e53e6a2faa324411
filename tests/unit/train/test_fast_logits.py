"""The logits the fast GRPO step scores (grpo_repro.train.shared_logps, config key train.fast_step)
are TRL 1.16's (Sec. 2 objective as its fused LM head computes it) beyond the shipped Qwen2 float32
setting:

* under bf16 autocast (CPU), the LM head's projection in the autocast dtype upcast to float32 (TRL's
  default) or in float32 (GRPOConfig.cast_lm_head_to_fp32), each equal to TRL's kernel and each
  distinguishable from the other;
* a config's logit scale and final-logit softcapping are applied as TRL applies them;
* with an entropy bonus (GRPOConfig.entropy_coef) the entropy carries a gradient: the loss and its
  gradients equal TRL's;
* an architecture the path is not checked on falls back to TRL's log-probs, the reason logged."""

import copy
import logging

import pytest
import torch

from tests.helpers.fast_fixtures import batch_inputs, build, micro_config, save_micro, trl_rows
from tests.helpers.tiny_lm import micro_policy, micro_records

torch.set_num_threads(1)
OUTPUTS = ("log_probs", "entropy")


@pytest.fixture(scope="module")
def micro_ref(tmp_path_factory):
    return save_micro(tmp_path_factory.mktemp("micro") / "ref")


def _head_case(seed=0, n=48, h=32, v=40):
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(n, h, generator=g)
    head = torch.nn.Linear(h, v, bias=False)
    with torch.no_grad():
        head.weight.copy_(torch.randn(v, h, generator=g) * 2)
    return hidden, head, torch.randint(0, v, (n,), generator=g)


def _ours(hidden, head, targets, fp32_head, temperature=0.7):
    from grpo_repro.train.shared_logps import _project, transform_logits

    z = transform_logits(_project(head, hidden, fp32_head), temperature)
    return torch.log_softmax(z, -1).gather(-1, targets[:, None])[:, 0]


def _trl(hidden, head, targets, fp32_head, temperature=0.7):
    """TRL's kernel as its fused forward calls it (trl/trainer/utils.py add_fused_lm_head)."""
    from trl.kernels import ChunkedLogProbFunction

    if fp32_head:
        with torch.autocast("cpu", enabled=False):
            out = ChunkedLogProbFunction.apply(
                hidden.float(), head.weight, None, targets, temperature, 32768, None, 1.0, OUTPUTS
            )
    else:
        out = ChunkedLogProbFunction.apply(
            hidden, head.weight, None, targets, temperature, 32768, None, 1.0, OUTPUTS
        )
    return out[0]


def test_lm_head_under_bf16_autocast_is_trls():
    """bf16 autocast on CPU: the projection rounded to bf16 then upcast (TRL's default) and the
    float32 projection (cast_lm_head_to_fp32) each equal TRL's kernel to float32 round-off, and differ
    from each other by bf16 rounding (so the test tells the two apart)."""
    hidden, head, targets = _head_case()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        res = {f: (_ours(hidden, head, targets, f), _trl(hidden, head, targets, f)) for f in (0, 1)}
    for ours, trl in res.values():
        assert ours.dtype == torch.float32
        assert torch.allclose(ours, trl, atol=1e-5)
    assert (res[0][0] - res[1][0]).abs().max() > 1e-3  # bf16 logits: a different result
    plain = _ours(hidden, head, targets, False)  # no autocast: float32 either way
    assert torch.allclose(plain, res[1][0], atol=1e-5)


def test_shared_prefix_logps_under_bf16_autocast_match_trl():
    """The whole shared-prefix forward under bf16 autocast (CPU) agrees with TRL's fused forward to
    bf16 tolerance (the backbone runs in bf16 in both, on different shapes)."""
    from trl.trainer.utils import add_fused_lm_head

    from grpo_repro.train.shared_logps import shared_prefix_logps
    from tests.unit.train.test_fast import random_rows

    model, tok = micro_policy(sharpness=1.0, init_std=0.1)
    trl_model = copy.deepcopy(model)
    add_fused_lm_head(trl_model, temperature=0.7, outputs=OUTPUTS)
    ids, mask, cw = trl_rows(tok, random_rows(tok, [0, 1, 2, 0, 1], 6))
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, :-cw] = -100
    ctx = torch.autocast("cpu", dtype=torch.bfloat16)
    with torch.no_grad():
        with ctx:
            trl = trl_model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
        lp, ent = shared_prefix_logps(model, ids, mask, cw, 0.7, True, ctx)
    assert lp.dtype == torch.float32
    assert torch.allclose(lp, trl.log_probs[:, -cw:], atol=0.05)
    assert torch.allclose(ent, trl.entropy[:, -cw:], atol=0.05)


def test_logit_scale_and_softcapping_are_trls():
    """A config with logit_scale and final_logit_softcapping (read by TRL's fused head as for
    Cohere / Gemma-2): the shared-prefix log-probs equal TRL's; ignoring them would not."""
    from trl.trainer.utils import add_fused_lm_head

    from grpo_repro.train import shared_logps
    from tests.unit.train.test_fast import random_rows

    model, tok = micro_policy()
    model.config.final_logit_softcapping = 1.5
    model.config.logit_scale = 0.6
    trl_model = copy.deepcopy(model)
    add_fused_lm_head(trl_model, temperature=0.7, outputs=OUTPUTS)
    ids, mask, cw = trl_rows(tok, random_rows(tok, [0, 2, 1, 0], 6))
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, :-cw] = -100
    with torch.no_grad():
        trl = trl_model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
        lp, ent = shared_logps.shared_prefix_logps(model, ids, mask, cw, 0.7, True)
        del model.config.final_logit_softcapping, model.config.logit_scale
        plain, _ = shared_logps.shared_prefix_logps(model, ids, mask, cw, 0.7, True)
    assert torch.allclose(lp, trl.log_probs[:, -cw:], atol=2e-6)
    assert torch.allclose(ent, trl.entropy[:, -cw:], atol=2e-6)
    assert (plain - trl.log_probs[:, -cw:]).abs().max() > 0.1


def test_logit_transform_reads_configs_as_trl():
    from transformers import CohereConfig, Gemma2Config, GraniteConfig, Qwen2Config

    from grpo_repro.train.shared_logps import logit_transform

    assert logit_transform(Qwen2Config()) == (1.0, None)
    assert logit_transform(Gemma2Config(final_logit_softcapping=30.0)) == (1.0, 30.0)
    assert logit_transform(CohereConfig(logit_scale=0.0625)) == (0.0625, None)
    assert logit_transform(GraniteConfig(logits_scaling=8.0)) == (0.125, None)


def test_entropy_bonus_loss_and_gradients_are_trls(micro_ref):
    """entropy_coef 0.1 (TRL's entropy bonus): on the same batch the fast log-probs give TRL's loss
    and gradients (the bonus's entropy carries a gradient); without it they would not."""
    from grpo_repro.train.shared_logps import shared_prefix_logps

    config = micro_config(max_len=8, beta=0.1, mu=1)
    records = micro_records()
    trl_tr = build(micro_ref, records, config, entropy_coef=0.1)
    fast_tr = build(micro_ref, records, config, fast={"rollouts": "trl"}, entropy_coef=0.1)
    assert fast_tr._entropy_bonus_enabled
    torch.manual_seed(0)
    for tr in (trl_tr, fast_tr):
        tr.model.train()
        tr.current_gradient_accumulation_steps = 1  # set by the Trainer's loop
    inputs = trl_tr._generate_and_score_completions(batch_inputs(records, 8))
    losses, grads = [], []
    for tr in (trl_tr, fast_tr):
        loss = tr._compute_loss(tr.model, dict(inputs))
        loss.backward()
        losses.append(float(loss))
        grads.append(torch.cat([p.grad.flatten() for p in tr.model.parameters()]))
    assert abs(losses[0] - losses[1]) <= 1e-5 * max(1.0, abs(losses[0]))
    assert torch.allclose(grads[0], grads[1], atol=1e-5 * float(grads[0].abs().max()))
    full = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1)
    mask = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], 1)
    cw = inputs["completion_ids"].shape[1]
    args = (fast_tr.model, full, mask, cw, 1.0, True)
    assert shared_prefix_logps(*args, entropy_grad=True)[1].requires_grad
    assert not shared_prefix_logps(*args, entropy_grad=False)[1].requires_grad


def test_unchecked_architecture_falls_back_to_trl(micro_ref, caplog):
    """A Llama policy: the fast trainer's log-probs are TRL's own (exactly), with a logged reason
    naming train.fast_step and the model type; the Qwen2 policy logs nothing."""
    from transformers import LlamaConfig, LlamaForCausalLM

    from grpo_repro.train.grpo import build_trainer
    from grpo_repro.train.shared_logps import refusal
    from tests.helpers.fast_fixtures import micro_reward
    from tests.unit.train.test_fast import random_rows

    qwen, tok = micro_policy()
    assert refusal(qwen) is None
    torch.manual_seed(0)
    llama = LlamaForCausalLM(LlamaConfig(**{**qwen.config.to_dict(), "model_type": "llama"}))
    assert "'llama'" in refusal(llama)
    config = micro_config(beta=0.0)
    made = {}
    for name, fast in (("trl", None), ("fast", {})):
        made[name], _, _ = build_trainer(
            copy.deepcopy(llama), tok, config, "grpo", 0, micro_records(), "/tmp/unused_fast", 4,
            reward_fn=micro_reward, fast=fast, disable_tqdm=True, save_strategy="no",
        )  # fmt: skip
    ids, mask, cw = trl_rows(tok, random_rows(tok, [0, 1, 2, 0], 5))
    with caplog.at_level(logging.WARNING, logger="grpo_repro.train.fast"):
        got = [
            made[n]._get_per_token_logps_and_entropies(made[n].model, ids, mask, cw, None, True)
            for n in ("trl", "fast")
        ]
    assert torch.equal(got[0][0], got[1][0]) and torch.equal(got[0][1], got[1][1])
    assert "train.fast_step" in caplog.text and "'llama'" in caplog.text
