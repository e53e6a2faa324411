"""The fast GRPO step (grpo_repro.train.fast, config key train.fast_step) computes what TRL computes
(Sec. 2 objective as TRL 1.16's GRPOTrainer implements it):

* shared-prefix log-probs (grpo_repro.train.shared_logps): log-probs, entropies and parameter
  gradients equal TRL's fused-LM-head forward on padded, shuffled, mixed-length batches with
  EOS-terminated and truncated completions;
* sampler rollouts (the `_generate_single_turn` hook) come out in TRL's format and masks through
  TRL's own code, and TRL's old/reference log-probs of them equal a direct forward;
* rollout seeds are per (step, generation, process, prompt group), never the global RNG;
* the compact SFT head (grpo_repro.train.sft.compact_lm_head) gives the same SFT loss and weights.

Rollout distribution and same-seed training curves: tests/unit/train/test_fast_training.py; exact
resume of the fast path: test_train.py::test_resume_is_exact."""

import copy

import numpy as np
import pytest
import torch

from tests.helpers.fast_fixtures import (
    batch_inputs,
    build,
    direct_logps,
    micro_config,
    save_micro,
    trl_rows,
)
from tests.helpers.tiny_lm import MICRO_PROMPTS, micro_policy, micro_records

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def micro_ref(tmp_path_factory):
    return save_micro(tmp_path_factory.mktemp("micro") / "ref")


# ---------------------------------------------------------------------------------------- log-probs


def random_rows(tok, order, max_len, seed=0, single_token=False):
    """(prompt, completion) rows: prompts MICRO_PROMPTS[i] for i in `order` (repeated, shuffled,
    of different lengths), random completions of 1..max_len tokens ending in EOS when shorter than
    max_len (truncated otherwise)."""
    prompts = [tok(p)["input_ids"] for p in MICRO_PROMPTS]
    g = torch.Generator().manual_seed(seed)
    rows = []
    for i in order:
        n = 1 if single_token else int(torch.randint(1, max_len + 1, (1,), generator=g))
        comp = torch.randint(3, len(tok), (n,), generator=g).tolist()
        if n < max_len:
            comp[-1] = tok.eos_token_id
        rows.append((prompts[i], comp))
    return rows


CASES = {  # name: (micro_policy kwargs, prompt order, single-token completions)
    "mixed": ({}, [0, 1, 2, 0, 1, 2, 2, 0, 1, 1], False),
    "gqa": ({"heads": 4, "kv_heads": 2}, [2, 2, 0, 3, 2, 0, 3, 3], False),  # grouped-query keys
    "one_prompt": ({}, [4] * 6, False),
    "single_token": ({}, [1, 0, 1, 2, 0], True),  # c_used = 1: no packed completion pass
    "llama": ({"arch": "llama"}, [0, 1, 2, 0, 1, 2, 2, 0, 1, 1], False),  # the default organism's
    "llama_gqa": ({"arch": "llama", "heads": 4, "kv_heads": 2}, [2, 2, 0, 3, 2, 0, 3, 3], False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_shared_prefix_logps_match_trl_fused_head(case):
    """Repeated prompts with different padding, shuffled rows, EOS-terminated and truncated
    completions: log-probs, entropies and parameter gradients equal TRL's fused-LM-head forward."""
    from trl.trainer.utils import add_fused_lm_head

    from grpo_repro.train.shared_logps import shared_prefix_logps

    kwargs, order, single = CASES[case]
    model, tok = micro_policy(**kwargs)
    model.train()
    trl_model = copy.deepcopy(model)
    add_fused_lm_head(trl_model, temperature=0.7, outputs=("log_probs", "entropy"))
    ids, mask, cw = trl_rows(tok, random_rows(tok, order, 7, single_token=single))
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, :-cw] = -100
    out = trl_model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
    lp, ent = shared_prefix_logps(model, ids, mask, cw, 0.7, True)
    assert torch.allclose(lp, out.log_probs[:, -cw:], atol=2e-6)
    assert torch.allclose(ent, out.entropy[:, -cw:], atol=2e-6)
    assert (lp[mask[:, -cw:] == 0] == 0).all() and (ent[mask[:, -cw:] == 0] == 0).all()
    assert model.config._attn_implementation == trl_model.config._attn_implementation  # restored
    w = torch.randn(lp.shape, generator=torch.Generator().manual_seed(1))
    (out.log_probs[:, -cw:] * w).sum().backward()
    (lp * w).sum().backward()
    # float32 round-off of two summation orders, which depends on the CPU's kernels: 1.4 times
    # rtol 1e-4 + atol 1e-6 x the largest entry on an AMD EPYC (within it on an Intel Xeon), 0.18
    # times this tolerance; a wrong gradient is off by O(1)
    for a, b in zip(trl_model.parameters(), model.parameters()):
        assert torch.allclose(a.grad, b.grad, rtol=1e-4, atol=1e-5 * a.grad.abs().max())


def test_shared_prefix_logps_decline_other_layouts():
    """Right-padded prompts or left-padded completions are not TRL's layout: None (the trainer then
    uses TRL's own forward)."""
    from grpo_repro.train.shared_logps import shared_prefix_logps

    model, tok = micro_policy()
    ids, mask, cw = trl_rows(tok, random_rows(tok, [0, 2, 1], 5))
    p = ids.shape[1] - cw
    right = mask.clone()
    right[:, :p] = 0
    right[:, : p - 2] = 1  # prompts right padded: the last prompt column is padding
    assert shared_prefix_logps(model, ids, right, cw) is None
    holes = mask.clone()
    holes[:, p] = 0  # a completion that starts with padding
    assert shared_prefix_logps(model, ids, holes, cw) is None
    assert shared_prefix_logps(model, ids, mask, ids.shape[1]) is None  # no prompt column


# ---------------------------------------------------------------------------------------- rollouts


def test_rollouts_format_masks_and_trl_logps(micro_ref):
    """Completions from the sampler go through TRL's own padding/masking: tokens after the first
    EOS are masked (EOS kept), truncated completions keep all max_completion_length tokens, and
    TRL's old-policy and reference log-probs of them (TRL's own forward) equal a direct forward;
    so do the shared-prefix log-probs of the same batch."""
    config = micro_config(max_len=10, beta=0.1, mu=2)
    tr = build(micro_ref, micro_records(), config, fast={"logps": "trl", "defer_old_logps": False})
    tr.model.train()
    out = tr._generate_and_score_completions(batch_inputs(micro_records(), 8))
    ids, cmask = out["completion_ids"], out["completion_mask"]
    eos, pad = tr.eos_token_ids, tr._tokenizer.pad_token_id
    n_trunc = n_eos = 0
    for row, m in zip(ids.tolist(), cmask.tolist()):
        n = sum(m)
        assert m == [1] * n + [0] * (len(m) - n)
        assert all(t == pad for t in row[n:])
        eos_at = [i for i, t in enumerate(row[:n]) if t in eos]
        if eos_at:
            assert eos_at == [n - 1]
            n_eos += 1
        else:
            assert n == 10
            n_trunc += 1
    assert n_eos and n_trunc
    full = torch.cat([out["prompt_ids"], ids], 1)
    mask = torch.cat([out["prompt_mask"], cmask], 1)
    direct = direct_logps(tr.model, full, mask, ids.shape[1])
    assert torch.allclose(out["old_per_token_logps"] * cmask, direct, atol=1e-5)
    assert torch.allclose(out["ref_per_token_logps"] * cmask, direct, atol=1e-5)  # step 0: ref = pi
    fast = build(micro_ref, micro_records(), config, fast={"defer_old_logps": False})
    lp, _, _ = fast._get_per_token_logps_and_entropies(fast.model, full, mask, ids.shape[1])
    assert torch.allclose(lp, direct, atol=1e-5)


def test_deferred_batches_lack_old_logps_until_first_loss(micro_ref):
    """defer_old_logps (mu = 2): the generated batch carries no old log-probs; the first loss
    forward stores its own detached log-probs there (those of the generating policy)."""
    config = micro_config(max_len=10, beta=0.1, mu=2)
    tr = build(micro_ref, micro_records(), config, fast={})
    tr.model.train()
    out = tr._generate_and_score_completions(batch_inputs(micro_records(), 8))
    assert "old_per_token_logps" not in out and "ref_per_token_logps" in out
    assert tr._deferred_keys == {"old_per_token_logps"}
    full = torch.cat([out["prompt_ids"], out["completion_ids"]], 1)
    mask = torch.cat([out["prompt_mask"], out["completion_mask"]], 1)
    direct = direct_logps(tr.model, full, mask, out["completion_ids"].shape[1])
    tr.current_gradient_accumulation_steps = 1  # set by the Trainer's loop
    tr._compute_loss(tr.model, out)
    assert torch.allclose(out["old_per_token_logps"] * out["completion_mask"], direct, atol=1e-5)
    assert not out["old_per_token_logps"].requires_grad
    mirror = build(micro_ref, micro_records(), config, "mirror", fast={})
    mirror.model.train()
    assert mirror._deferrable_keys() == {"old_per_token_logps", "ref_per_token_logps"}


def test_rollout_seeds_are_per_step_and_prompt(micro_ref):
    """Prompt group g at optimizer step s draws from its own seed: the same (step, batch) gives the
    same completions whatever the global RNG, which the hook leaves untouched; another step gives
    others; a group's completions do not depend on the other groups of the batch."""
    records = micro_records()
    tr = build(micro_ref, records, micro_config(max_len=10), fast={})
    tr.model.train()
    tok = tr.processing_class
    prompt_ids = [tok(r["prompt"])["input_ids"] for r in records for _ in range(8)]
    tr.state.global_step = 6
    a, _ = tr._generate_single_turn(prompt_ids, None, {}, 8)
    torch.manual_seed(99)
    state = torch.get_rng_state()
    tr.state.global_step = 6
    tr._gen_counter = None
    b, _ = tr._generate_single_turn(prompt_ids, None, {}, 8)
    assert torch.equal(torch.get_rng_state(), state)  # the global RNG is neither read nor advanced
    tr.state.global_step = 8
    c, _ = tr._generate_single_turn(prompt_ids, None, {}, 8)
    assert a == b and a != c
    tr.state.global_step = 6
    tr._gen_counter = None
    swapped = prompt_ids[:8] + prompt_ids[32:40] + prompt_ids[16:32] + prompt_ids[8:16]
    d, _ = tr._generate_single_turn(swapped, None, {}, 8)
    assert d[:8] == a[:8] and d[16:32] == a[16:32]  # groups 0, 2, 3 kept their place
    # a prompt drawn twice into one batch is two groups, each with the seed of its place: group 1
    # draws the same whatever precedes it (as on process 1 of 2, which holds it alone)
    distinct = list(dict.fromkeys(tuple(ids) for ids in prompt_ids))
    a_ids, b_ids, c_ids = (list(x) for x in distinct[:3])
    tr.state.global_step = 6
    tr._gen_counter = None
    twice, _ = tr._generate_single_turn([a_ids] * 16 + [b_ids] * 8, None, {}, 8)
    tr._gen_counter = None
    once, _ = tr._generate_single_turn([c_ids] * 8 + [a_ids] * 8 + [b_ids] * 8, None, {}, 8)
    assert twice[8:] == once[8:] and twice[:8] != twice[8:16]
    assert tr.rollout_seed("train", 0, 1) != tr.rollout_seed("train", 0, 2)
    assert tr.rollout_seed("train", 0, 1) != tr.rollout_seed("train", 1, 1)  # k-th generation
    assert tr.rollout_seed("train", 0, 1) != tr.rollout_seed("eval", 0, 1)


# ---------------------------------------------------------------------------------------- SFT


def test_compact_lm_head_sft_same_loss():
    """SFT with the compact LM head (completion positions only) logs the same loss curve and ends
    with the same weights as TRL's every-position head; TRL's switch is restored afterwards."""
    import contextlib
    import tempfile

    import trl.trainer.utils as trl_utils
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from grpo_repro.train.sft import compact_lm_head

    results = []
    for compact in (False, True):
        model, tok = micro_policy()
        model.train()
        answers = ["#### 1", "#### 3", "#### 3", "#### 3", "#### 2"]
        data = Dataset.from_dict({"prompt": MICRO_PROMPTS * 4, "completion": answers * 4})
        args = SFTConfig(
            output_dir=tempfile.mkdtemp(),
            max_steps=4,
            per_device_train_batch_size=5,
            learning_rate=1e-3,
            completion_only_loss=True,
            logging_steps=1,
            save_strategy="no",
            report_to=[],
            use_cpu=True,
            bf16=False,
            seed=0,
            data_seed=0,
            disable_tqdm=True,
            gradient_checkpointing=False,
        )
        tr = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tok)
        with compact_lm_head() if compact else contextlib.nullcontext():
            tr.train()
        rows = [r for r in tr.state.log_history if "loss" in r and "train_runtime" not in r]
        results.append(([r["loss"] for r in rows], copy.deepcopy(model.state_dict())))
    (la, wa), (lb, wb) = results
    assert len(la) == 4 and np.allclose(la, lb, rtol=1e-5, atol=1e-7)
    for k in wa:
        assert torch.allclose(wa[k], wb[k], atol=1e-4), k
    assert trl_utils._use_triton(torch.device("cpu")) is False  # restored


@pytest.mark.parametrize(
    "rows, size, expected",
    [
        ([[1], [1], [2], [2]], None, [(0, 2), (2, 2)]),
        ([[1], [1], [1], [1], [2], [2]], None, [(0, 4), (4, 2)]),  # no group size: one run
        ([[1], [1], [1], [1], [2], [2]], 2, [(0, 2), (2, 2), (4, 2)]),  # two groups of prompt 1
        ([[1], [2], [2], [3]], 2, [(0, 1), (1, 1), (2, 1), (3, 1)]),  # rows 1 and 2: two groups
        ([[1], [1], [1]], 1, [(0, 1), (1, 1), (2, 1)]),  # TRL's tool turns: one row per group
    ],
)
def test_group_rows_never_spans_a_group_boundary(rows, size, expected):
    from grpo_repro.train.fast_rollouts import group_rows

    assert group_rows(rows, size) == expected
