"""The fast GRPO step (grpo_repro.train.fast) trains like TRL 1.16's GRPOTrainer (Sec. 2 objective,
Sec. 6 experiment):

* the batched sampler's rollouts have the distribution of TRL's `model.generate` rollouts: per
  prompt, success rate, completion length and first two tokens, two-sample chi-square with
  p > 1e-3 (temperature 1 and 0.6);
* with TRL's own generation, the fast log-probs (shared prefix, deferred old and, mirror,
  reference log-probs) give TRL's training curve for the same seed: same samples and rewards, loss /
  KL / entropy / grad norm / clip ratio within 1e-4 relative, final weights within 1e-3 of the
  training update, for grpo, mirror and dr_grpo.
Numerical equalities of each part: tests/unit/train/test_fast.py."""

import numpy as np
import pytest
import torch
from scipy import stats as sps

from tests.helpers.fast_fixtures import build, micro_config, micro_reward, save_micro
from tests.helpers.tiny_lm import micro_records

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def micro_ref(tmp_path_factory):
    return save_micro(tmp_path_factory.mktemp("micro") / "ref")


@pytest.fixture(scope="module")
def sharp_ref(tmp_path_factory):
    """The micro policy with peaked next-token distributions (sharpness 12; at 4 the first tokens
    are nearly uniform and a sampler ignoring the temperature would pass)."""
    return save_micro(tmp_path_factory.mktemp("sharp") / "ref", sharpness=12.0)


def _collect(tr, records, G, rounds, seed_step):
    """Completions (decoded), lengths and first two tokens (as one id) of `rounds` generation
    batches of every record x G."""
    tok = tr.processing_class
    prompt_ids = [tok(r["prompt"])["input_ids"] for r in records for _ in range(G)]
    texts, lengths, heads = [], [], []
    for i in range(rounds):
        seed_step(i)
        comp, _ = tr._generate_single_turn(prompt_ids, None, {}, G)
        texts.append(tok.batch_decode(comp, skip_special_tokens=True))
        lengths.append([len(c) for c in comp])
        heads.append([c[0] * len(tok) + (c[1] if len(c) > 1 else 0) for c in comp])
    shape = (rounds, len(records), G)
    return tuple(np.array(x).reshape(shape) for x in (texts, lengths, heads))


def _same(counts, what):
    """Two-sample chi-square on a 2 x bins table of counts; bins with < 10 samples pooled."""
    keep = counts.sum(0) >= 10
    table = np.concatenate([counts[:, keep], counts[:, ~keep].sum(1, keepdims=True)], 1)
    table = table[:, table.sum(0) > 0]
    if table.shape[1] > 1:
        assert sps.chi2_contingency(table).pvalue > 1e-3, (what, table)


@pytest.mark.parametrize("temperature,rounds", [(1.0, 60), (0.6, 40)])
def test_distribution_matches_trl_generation(sharp_ref, temperature, rounds):
    """Per prompt, the success rate (reward), the completion-length distribution and the
    distribution of the first two tokens (sensitive to the temperature) of the sampler's rollouts are those of TRL's
    model.generate rollouts (two-sample chi-square, fixed seeds, 8 x `rounds` samples per prompt
    and method)."""
    records = micro_records()
    config = micro_config(max_len=10)
    config["train"]["temperature"] = temperature
    trl_tr = build(sharp_ref, records, config)
    fast_tr = build(sharp_ref, records, config, fast={})
    trl_tr.model.train()
    fast_tr.model.train()
    G = 8
    torch.manual_seed(1234)
    t_text, t_len, t_head = _collect(trl_tr, records, G, rounds, lambda i: None)

    def step(i):
        fast_tr.state.global_step = i

    f_text, f_len, f_head = _collect(fast_tr, records, G, rounds, step)
    n_bins = len(trl_tr.processing_class) ** 2
    for p, r in enumerate(records):
        succ = [
            micro_reward(None, list(t[:, p].ravel()), [r["gold"]] * t[:, p].size)
            for t in (t_text, f_text)
        ]
        _same(np.array([[sum(s), len(s) - sum(s)] for s in succ]), ("success", r["prompt"]))
        lens = np.array([np.bincount(x[:, p].ravel(), minlength=11) for x in (t_len, f_len)])
        _same(lens, ("length", r["prompt"]))
        heads = np.array([np.bincount(x[:, p].ravel(), minlength=n_bins) for x in (t_head, f_head)])
        _same(heads, ("first two tokens", r["prompt"]))
    # both EOS-terminated and truncated completions are exercised, by both methods
    for lengths in (t_len, f_len):
        assert (lengths == 10).mean() > 0.05 and (lengths < 10).mean() > 0.05


def _run_log(tr):
    tr.train()
    rows = [r for r in tr.state.log_history if "loss" in r and "train_runtime" not in r]
    return rows, {k: v.detach().clone() for k, v in tr.model.state_dict().items()}


@pytest.mark.parametrize("variant", ["grpo", "mirror", "dr_grpo"])
def test_same_curve_as_trl_with_trl_rollouts(micro_ref, variant):
    """TRL's own generation + shared-prefix log-probs + deferred old (and, mirror, reference)
    log-probs: the same samples and rewards (bit for bit), and the loss / KL / entropy / grad norm /
    clip-ratio curve of the unmodified trainer within 1e-4 x max(1, |value|), over 6 steps (3
    generations, mu = 2)."""
    from safetensors.torch import load_file

    records = micro_records(2)
    config = micro_config(max_len=10, mu=2, beta=0.1)
    base_rows, base_w = _run_log(build(micro_ref, records, config, variant, steps=6))
    fast = build(micro_ref, records, config, variant, steps=6, fast={"rollouts": "trl"})
    fast_rows, fast_w = _run_log(fast)
    assert len(base_rows) == len(fast_rows) == 6
    # the deferred old log-probs are really used in iteration 2: the ratio moves and gets clipped
    assert any(r["clip_ratio/region_mean"] > 0 for r in fast_rows)
    for a, b in zip(base_rows, fast_rows):
        if "reward" in a:
            assert a["reward"] == b["reward"]
            assert a["completions/mean_length"] == b["completions/mean_length"]
        for k in ("loss", "kl", "entropy", "grad_norm", "clip_ratio/region_mean"):
            if k in a:
                assert abs(a[k] - b[k]) <= 1e-4 * max(1.0, abs(a[k])), (k, a[k], b[k])
    # Adam turns float-rounding differences of near-zero gradient entries into update differences
    # of up to ~lr: compare the weights relative to the size of the training update
    w0 = load_file(micro_ref / "model.safetensors")
    for k in w0:
        if "k_proj.bias" in k:  # exact gradient 0 (softmax is shift-invariant): Adam updates noise
            continue
        assert (base_w[k] - fast_w[k]).norm() <= 1e-3 * (base_w[k] - w0[k]).norm() + 1e-7, k
