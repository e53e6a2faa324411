"""Byte-level BPE tokenizer of a pipeline-built Qwen2 (organism.tokenizer: bpe; the rehearsal's stand-in):
the paper's model reads GSM8K through Qwen2.5's byte-level BPE and chat template (Sec. 6), and this
is that form at toy size, built offline with `tokenizers` from the training split's text.

The pre-tokenizer is Qwen2's (its regex splits digits one by one, then byte-level), the special
tokens are Qwen2.5-Instruct's (<|endoftext|> = pad, <|im_start|>, <|im_end|> = eos, no bos) and the
chat template is Qwen2.5-Instruct's (system / user / assistant turns between <|im_start|> and
<|im_end|>, the default system prompt when none is given, `add_generation_prompt` opening the
assistant turn; tool calls left out). Byte-level: every text is encodable, no unknown token.

Saved as a transformers fast tokenizer; a model directory marked with organism.json loads it with
PreTrainedTokenizerFast (grpo_repro.models.load_tokenizer), like the word-level one.
"""

from __future__ import annotations

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from grpo_repro.models import QWEN2_PATTERN  # the pre-tokenisation that makes it Qwen2's

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
