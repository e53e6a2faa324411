"""The rehearsal's data path (Sec. 6 prompts, config/rehearsal.yaml over config/paper.yaml): a
byte-level BPE trained on the shipped GSM8K excerpt with Qwen2.5's chat template (the stand-in
tokenizer of the rehearsal's hub cache), GSM8K read from `datasets`' cache, prompts rendered by
data_prepare, and a built pi_ref saved from the random initialisation (organism.sft_steps 0)."""

import json

import pytest

from grpo_repro.data.prepare import (
    DEFAULT_SYSTEM,
    IM_END,
    IM_START,
    PAD,
    build_bpe_tokenizer,
    prepare,
)
from grpo_repro.data.sets import read_prompts
from grpo_repro.data.source_records.gsm8k import load_gsm8k
from grpo_repro.reward import is_correct
from tests.helpers import ROOT, rehearsal

EXCERPT = ROOT / "workflow" / "resources" / "gsm8k"


@pytest.fixture(scope="module")
def train():
    return load_gsm8k("train", EXCERPT / "train.jsonl")


@pytest.fixture(scope="module")
def tok(train):
    return build_bpe_tokenizer([t for r in train for t in (r["question"], r["answer"])], 1024)


def test_byte_level_round_trip_and_specials(tok, train):
    test = load_gsm8k("test", EXCERPT / "test.jsonl")
    for r in train + test:  # unseen text too: byte-level, nothing is unknown
        for text in (r["question"], r["answer"]):
            assert tok.decode(tok(text)["input_ids"]) == text
    assert is_correct(tok.decode(tok(train[0]["answer"])["input_ids"]), train[0]["gold"])
    assert len(tok) == 1024
    for special in (PAD, IM_START, IM_END):
        assert len(tok(special)["input_ids"]) == 1
    assert (tok.eos_token, tok.pad_token, tok.bos_token) == (IM_END, PAD, None)
    # Qwen2's pre-tokeniser: digits one by one
    assert tok.convert_ids_to_tokens(tok("1234 apples")["input_ids"])[:4] == ["1", "2", "3", "4"]


def test_deterministic(train):
    texts = [r["question"] for r in train]
    a, b = build_bpe_tokenizer(texts, 500), build_bpe_tokenizer(texts, 500)
    assert a.backend_tokenizer.to_str() == b.backend_tokenizer.to_str()


def test_qwen25_chat_template(tok):
    user = [{"role": "user", "content": "Q?"}]
    with_system = [{"role": "system", "content": "S."}, *user]
    assert tok.apply_chat_template(with_system, tokenize=False, add_generation_prompt=True) == (
        "<|im_start|>system\nS.<|im_end|>\n<|im_start|>user\nQ?<|im_end|>\n<|im_start|>assistant\n"
    )
    assert tok.apply_chat_template(user, tokenize=False, add_generation_prompt=False) == (
        f"<|im_start|>system\n{DEFAULT_SYSTEM}<|im_end|>\n<|im_start|>user\nQ?<|im_end|>\n"
    )


@pytest.fixture(scope="module")
def prepared(tmp_path_factory, hub_cache):
    """data_prepare on the rehearsal, reading the hub from its stand-in cache, offline."""
    config = rehearsal.load()
    out = tmp_path_factory.mktemp("rehearsal_data")
    paths = {k: out / f"{k}.jsonl" for k in ("train", "test", "pool")}
    paths.update(stats=out / "splits.json", tokenizer=out / "tokenizer")
    with pytest.MonkeyPatch.context() as mp:
        for var, value in rehearsal.env(hub_cache).items():
            mp.setenv(var, value)
        stats = prepare(config, paths)
    return config, stats, paths


def test_prepare_renders_gsm8k_with_the_chat_template(prepared):
    config, stats, paths = prepared
    test, tokenizer = paths["test"], paths["tokenizer"]
    sizes = {k: v["n"] for k, v in stats.items()}
    assert sizes == {"train": 64, "val": 0, "test": 16, "pool": 8}
    system, instruction = config["prompt"]["system"], config["prompt"]["instruction"]
    records = read_prompts(test)
    assert records[0]["gold"] == "18"
    for r in records:
        assert r["prompt"].startswith(f"{IM_START}system\n{system}{IM_END}\n{IM_START}user\n")
        assert r["prompt"].endswith(f" {instruction}{IM_END}\n{IM_START}assistant\n")
    saved = json.loads((tokenizer / "tokenizer_config.json").read_text())
    assert saved["eos_token"] == IM_END
    assert (tokenizer / "chat_template.jinja").read_text().startswith("{%- if messages[0]")


def test_random_init_reference_policy(prepared, tmp_path):
    """organism.sft_steps 0: pi_ref is the seeded random initialisation, loadable like a hub
    model (its tokenizer renders the same prompts), with an empty SFT log."""
    import torch

    from grpo_repro.models import load_policy
    from grpo_repro.train import sft

    config, _, paths = prepared
    train, tokenizer = paths["train"], paths["tokenizer"]
    organism = {**config["organism"], "sft_steps": 0}
    runs = []
    for i in range(2):
        model = tmp_path / f"m{i}"
        logs = (tmp_path / f"log{i}.csv", tmp_path / f"run{i}.json")
        sft.run(train, tokenizer, model, *logs, seed=0, organism=organism)
        runs.append(model)
    assert (tmp_path / "log0.csv").read_text().splitlines() == ["step,loss"]
    m0, tok = load_policy(runs[0])
    m1, _ = load_policy(runs[1])
    assert all(
        torch.equal(a, b) for a, b in zip(m0.state_dict().values(), m1.state_dict().values())
    )
    assert m0.config.model_type == "qwen2" and m0.config.vocab_size == len(tok)
    assert (
        m0.generation_config.eos_token_id == tok.eos_token_id == tok.convert_tokens_to_ids(IM_END)
    )
    prompt = read_prompts(train)[0]["prompt"]
    assert tok.chat_template and len(tok(prompt)["input_ids"]) < m0.config.max_position_embeddings
    with torch.no_grad():
        out = m0.generate(**tok([prompt], return_tensors="pt"), max_new_tokens=5, do_sample=False)
    assert out.shape[1] == len(tok(prompt)["input_ids"]) + 5 or tok.eos_token_id in out[0]
