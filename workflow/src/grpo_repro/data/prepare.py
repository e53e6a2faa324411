"""The rule data_prepare (Sec. 6 prompt sets): the records of the configured data source
(grpo_repro.data.sources: the organism's generated problems, GSM8K from the hub or local JSONL),
rendered with the tokenizer of the model: for a model the pipeline builds, the
organism's word-level one or a byte-level BPE with Qwen2.5's chat template; else the model's own.
Every record gets its rendered prompt, so SFT, GRPO and evaluation read the same text. Writes the splits of grpo_repro.data.sets
(train, val, test, the training pool, and for the organism the SFT data written by the noisy
teacher) and splits.json: each split's size and difficulty mix (steps per problem).

The organism's word-level tokenizer (`build_tokenizer`) is built with `tokenizers` and wrapped as a
transformers fast tokenizer. Every integer 0..max_value is one token (a character-level tokenizer
failed to learn to copy numbers: held-out success 0.07 after 5 min of SFT). Spaces are dropped;
newlines are tokens.

A saved one loads with grpo_repro.models.load_tokenizer (the class its tokenizer_config.json
declares, PreTrainedTokenizerFast) and, beside the default Llama organism, with AutoTokenizer; not
beside a Qwen2 (organism.arch qwen2): with model_type=qwen2 in config.json, AutoTokenizer silently
builds a byte-level Qwen2 tokenizer.

The byte-level BPE tokenizer of a pipeline-built Qwen2 (`build_bpe_tokenizer`; organism.tokenizer:
bpe; the rehearsal's stand-in): the paper's model reads GSM8K through Qwen2.5's byte-level BPE and
chat template (Sec. 6), and this is that form at toy size, built offline with `tokenizers` from the
training split's text. The pre-tokenizer is Qwen2's (its regex splits digits one by one, then
byte-level), the special tokens are Qwen2.5-Instruct's (<|endoftext|> = pad, <|im_start|>,
<|im_end|> = eos, no bos) and the chat template is Qwen2.5-Instruct's (system / user / assistant
turns between <|im_start|> and <|im_end|>, the default system prompt when none is given,
`add_generation_prompt` opening the assistant turn; tool calls left out). Byte-level: every text is
encodable, no unknown token. Saved as a transformers fast tokenizer; a model directory marked with
organism.json loads it with PreTrainedTokenizerFast, like the word-level one.
"""

from __future__ import annotations

import json
import random
import re

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from grpo_repro import io
from grpo_repro.data import sets, sources
from grpo_repro.data.sets import format_prompt
from grpo_repro.models import QWEN2_PATTERN  # the pre-tokenisation that makes it Qwen2's

SFT_SEED_OFFSET = 777  # the noisy teacher's slips are drawn from seed + this


def make_tokenizer(config: dict, splits: dict):
    """The tokenizer of a model the pipeline builds (model.name_or_path: null): the organism's
    word-level one from every split's rendered text (organism.tokenizer: word), or a byte-level
    BPE with Qwen2.5's chat template trained on the training split's questions and solutions
    (bpe); else the model's own tokenizer."""
    if config["model"]["name_or_path"] is None and config["organism"]["tokenizer"] == "bpe":
        texts = [t for r in splits["train"] for t in (r["question"], r["answer"])]
        return build_bpe_tokenizer(texts, config["organism"]["bpe_vocab_size"])
    if config["model"]["name_or_path"] is None:
        records = [r for recs in splits.values() for r in recs]
        rendered = [format_prompt(r["question"], config["prompt"]) for r in records]
        return build_tokenizer(
            rendered + [r["answer"] for r in records], config["organism"]["max_value"]
        )
    from grpo_repro.hub import spec
    from grpo_repro.models import load_tokenizer

    return load_tokenizer(spec(config["model"]))  # a hub model at its pinned revision


def teach(records: list[dict], organism: dict, seed: int) -> list[dict]:
    """The SFT data: each record with `sft_answer`, the noisy teacher's worked solution (slips,
    and the misconception of organism.teacher_misconception; grpo_repro.data.organism.noisy_solution);
    the gold answer stays correct."""
    from grpo_repro.data.organism import noisy_solution

    rng = random.Random(seed + SFT_SEED_OFFSET)
    p, slips, top = organism["teacher_noise"], organism["teacher_slips"], organism["max_value"]
    q = organism["teacher_misconception"]
    return [{**r, "sft_answer": noisy_solution(r, rng, p, slips, top, q=q)} for r in records]


def split_stats(splits: dict, max_steps: int | None) -> dict:
    """{split: {"n": size, "step_mix": [share of 1, 2, ... step problems]}} (organism only)."""
    from grpo_repro.data.organism import step_mix

    out = {}
    for name, recs in splits.items():
        out[name] = {"n": len(recs)}
        if max_steps and recs and "steps" in recs[0]:
            out[name]["step_mix"] = step_mix(recs, max_steps)
    return out


def prepare(config: dict, outputs: dict) -> dict:
    """Write every split of `outputs` ({split: path}: train, val, test, pool, sft, plus tokenizer
    (a directory) and stats (splits.json)); returns the statistics. `config` holds the keys seed,
    data, prompt, organism and model."""
    splits = sources.source(config).records(config)  # {split: records} of data.source
    tokenizer = make_tokenizer(config, splits)
    tokenizer.save_pretrained(outputs["tokenizer"])  # a record of what rendered the prompts
    splits = {k: sets.render(v, config["prompt"], tokenizer) for k, v in splits.items()}
    splits["pool"] = sets.train_pool(splits["train"], config["data"]["train_pool"], config["seed"])
    if "sft" in splits:
        splits["sft"] = teach(splits["sft"], config["organism"], config["seed"])
    elif "sft" in outputs:  # a built model on GSM8K (bpe): SFT on the training split's solutions
        splits["sft"] = list(splits["train"])
    for name, recs in splits.items():
        if name in outputs:
            io.write_jsonl(outputs[name], recs)
    generated = sources.source(config).generate is not None  # the organism's step mix
    stats = split_stats(splits, config["organism"]["max_steps"] if generated else None)
    io.write_json(outputs["stats"], stats)
    print(json.dumps(stats))
    return stats


SPECIALS = {"pad_token": "<pad>", "eos_token": "<eos>", "bos_token": "<bos>", "unk_token": "<unk>"}
PIECE = r"\d+|[A-Za-z]+|#+|\n|[^\sA-Za-z\d]"


def words_of(texts) -> set[str]:
    return {w for t in texts for w in re.findall(PIECE, t)}


def build_tokenizer(texts, max_value: int = 999) -> PreTrainedTokenizerFast:
    """Vocabulary: specials, every integer 0..max_value, and every piece seen in `texts`."""
    pieces = sorted(words_of(texts) - {str(i) for i in range(max_value + 1)})
    vocab_list = list(SPECIALS.values()) + [str(i) for i in range(max_value + 1)] + pieces
    vocab = {tok: i for i, tok in enumerate(vocab_list)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=SPECIALS["unk_token"]))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(r"[ \t]+"), behavior="removed"),
            pre_tokenizers.Split(Regex(PIECE), behavior="isolated"),
        ]
    )
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, **SPECIALS)
    fast.padding_side = "left"  # generation pads on the left (training and evaluation agree)
    return fast


PAD, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
DEFAULT_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."
#: Qwen2.5-Instruct's chat template without the tool-call branches
CHAT_TEMPLATE = (
    "{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>system\\n" + DEFAULT_SYSTEM + "<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if not (message['role'] == 'system' and loop.first) %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- endif %}"
)
#: max_position_embeddings of the built model (Qwen2.5-0.5B-Instruct's; RoPE has no table to size)
MAX_POSITIONS = 32768


def build_bpe_tokenizer(texts, vocab_size: int) -> PreTrainedTokenizerFast:
    """A byte-level BPE of at most `vocab_size` tokens (256 bytes, 3 specials, merges) trained on
    `texts`, with Qwen2.5-Instruct's special tokens and chat template. Deterministic in `texts`."""
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[PAD, IM_START, IM_END],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(list(texts), trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=IM_END,
        pad_token=PAD,
        additional_special_tokens=[IM_START],
        clean_up_tokenization_spaces=False,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.padding_side = "left"  # generation pads on the left (training and evaluation agree)
    return fast
