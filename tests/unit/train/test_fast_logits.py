"""The logits the fast GRPO step scores (grpo_repro.train.shared_logps, config key train.fast_step)
are TRL 1.16's (Sec. 2 objective as its fused LM head computes it) beyond the shipped Qwen2 float32
setting:

* under bf16 autocast (CPU) the LM head is TRL's kernel: log-probs and gradients equal, gradient
  products in float32 (autograd through the bf16 linear, the fast path before, rounds them);
* with an entropy bonus (GRPOConfig.entropy_coef) the loss and its gradients equal TRL's (its
  entropy carries a gradient: TRL's path);
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
    hidden = torch.randn(n, h, generator=g).requires_grad_()
    head = torch.nn.Linear(h, v, bias=False)
    with torch.no_grad():
        head.weight.copy_(torch.randn(v, h, generator=g) * 2)
    return hidden, head, torch.randint(0, v, (n,), generator=g)


def _grads(fn, hidden, head, w):
    """(log-probs, d/d hidden, d/d weight) of sum(w * fn(hidden, head))."""
    hidden.grad = head.weight.grad = None
    lp = fn(hidden, head)
    (lp * w).sum().backward()
    return lp.detach(), hidden.grad.clone(), head.weight.grad.clone()


def _trl(hidden, head, targets, temperature=0.7):
    """TRL's kernel as its fused forward calls it (trl/trainer/utils.py add_fused_lm_head)."""
    from trl.kernels import ChunkedLogProbFunction

    args = (targets, temperature, 32768, None, 1.0, OUTPUTS)
    return ChunkedLogProbFunction.apply(hidden, head.weight, None, *args)[0]


def _bf16_autograd(hidden, head, targets, temperature=0.7):
    """Autograd through the bf16 linear (the fast path before): the backward's products round to bf16."""
    z = head(hidden).float() / temperature
    return torch.log_softmax(z, -1).gather(-1, targets[:, None])[:, 0]


def test_lm_head_under_bf16_autocast_is_trls():
    """bf16 autocast on CPU: score_tokens' log-probs and gradients (hidden and weight) equal TRL's
    kernel; autograd through the bf16 linear gets other gradients (bf16-rounded products, which TRL
    avoids: chunked_logprob.py `_addmm_fp32`). In float32 (the log_softmax path) they equal TRL's
    kernel in float32."""
    from grpo_repro.train.shared_logps import score_tokens

    hidden, head, targets = _head_case()
    w = torch.randn(targets.shape, generator=torch.Generator().manual_seed(1))

    def ours_fn(x, m):
        return score_tokens(m, x, targets, 0.7)[0]

    def trl_fn(x, m):
        return _trl(x, m, targets)

    with torch.autocast("cpu", dtype=torch.bfloat16):
        ours, trl = _grads(ours_fn, hidden, head, w), _grads(trl_fn, hidden, head, w)
        rounded = _grads(lambda x, m: _bf16_autograd(x, m, targets), hidden, head, w)
    for a, b in zip(ours, trl):
        assert a.dtype == torch.float32 and torch.allclose(a, b, atol=1e-6, rtol=1e-5)
    assert torch.allclose(rounded[0], ours[0], atol=1e-5)  # the same forward ...
    assert (rounded[2] - ours[2]).abs().max() > 1e-3 * ours[2].abs().max()  # ... not backward
    plain, fp32 = _grads(ours_fn, hidden, head, w), _grads(trl_fn, hidden, head, w)
    for a, b in zip(plain, fp32):  # no autocast: float32, the log_softmax path
        assert torch.allclose(a, b, atol=1e-5)
    assert (plain[0] - ours[0]).abs().max() > 1e-3  # bf16 logits: another result


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
    assert torch.allclose(lp, trl.log_probs[:, -cw:], atol=0.01)  # measured 2.6e-3
    assert torch.allclose(ent, trl.entropy[:, -cw:], atol=1e-3)  # measured 1e-4


def test_bf16_training_loss_is_trls(micro_ref):
    """GRPOConfig bf16 on CPU (the trainer's autocast): on the same batch the fast step's loss and
    gradients equal TRL's to bf16 tolerance, and autocast is really on in the fast forward."""
    from grpo_repro.train import shared_logps

    config = micro_config(max_len=8, beta=0.1, mu=1)
    records = micro_records()
    trl_tr = build(micro_ref, records, config, bf16=True)
    fast_tr = build(micro_ref, records, config, fast={"rollouts": "trl"}, bf16=True)
    torch.manual_seed(0)
    for tr in (trl_tr, fast_tr):
        tr.model.train()
        tr.current_gradient_accumulation_steps = 1  # set by the Trainer's loop
    inputs = trl_tr._generate_and_score_completions(batch_inputs(records, 8))
    seen = []
    real = shared_logps.score_tokens

    def spy(*a, **k):
        seen.append(torch.is_autocast_enabled("cpu"))
        return real(*a, **k)

    shared_logps.score_tokens = spy
    try:
        out = []
        for tr in (trl_tr, fast_tr):
            loss = tr._compute_loss(tr.model, dict(inputs))
            loss.backward()
            out.append(
                (loss.detach(), torch.cat([p.grad.flatten() for p in tr.model.parameters()]))
            )
    finally:
        shared_logps.score_tokens = real
    assert seen and all(seen)
    assert abs(float(out[0][0] - out[1][0])) <= 0.02 * max(1.0, abs(float(out[0][0])))
    cos = torch.nn.functional.cosine_similarity(out[0][1], out[1][1], dim=0)
    assert cos > 0.999, float(cos)  # measured 0.99987


def test_entropy_bonus_loss_and_gradients_are_trls(micro_ref):
    """entropy_coef 0.1 (TRL's entropy bonus, whose entropy carries a gradient): on the same batch
    the fast trainer gives TRL's loss and gradients (it takes TRL's log-probs)."""
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


def test_unchecked_architecture_falls_back_to_trl(micro_ref, caplog):
    """A Mistral policy (an architecture the shared-prefix log-probs are not checked on): the fast
    trainer's log-probs are TRL's own (exactly), with a logged reason naming train.fast_step and the
    model type; the Qwen2 and Llama policies log nothing."""
    from transformers import MistralConfig, MistralForCausalLM

    from grpo_repro.train.grpo import build_trainer
    from grpo_repro.train.run_settings import grpo_run
    from grpo_repro.train.shared_logps import refusal
    from tests.helpers.fast_fixtures import micro_reward
    from tests.unit.train.test_fast import random_rows

    qwen, tok = micro_policy()
    assert refusal(qwen) is None and refusal(micro_policy(arch="llama")[0]) is None
    torch.manual_seed(0)
    other = MistralForCausalLM(MistralConfig(**{**qwen.config.to_dict(), "model_type": "mistral"}))
    assert "'mistral'" in refusal(other)
    run = grpo_run(micro_config(beta=0.0), "grpo", 0)
    made = {}
    for name, fast in (("trl", None), ("fast", {})):
        made[name], _, _ = build_trainer(
            copy.deepcopy(other), tok, run, micro_records(), "/tmp/unused_fast", 4,
            reward_fn=micro_reward, fast=fast, disable_tqdm=True, save_strategy="no",
        )  # fmt: skip
    ids, mask, cw = trl_rows(tok, random_rows(tok, [0, 1, 2, 0], 5))
    with caplog.at_level(logging.WARNING, logger="grpo_repro.train.fast"):
        got = [
            made[n]._get_per_token_logps_and_entropies(made[n].model, ids, mask, cw, None, True)
            for n in ("trl", "fast")
        ]
    assert torch.equal(got[0][0], got[1][0]) and torch.equal(got[0][1], got[1][1])
    assert "train.fast_step" in caplog.text and "'mistral'" in caplog.text
