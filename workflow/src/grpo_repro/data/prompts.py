"""Prompt format (unstated in the paper, Sec. 6: chosen, configured and recorded).

Prompts are rendered to plain strings once, here, and the same strings go to SFT, to TRL's GRPO
(as standard, non-conversational prompts) and to evaluation, so the three cannot disagree.
"""

from __future__ import annotations


def format_prompt(question: str, prompt_cfg: dict, tokenizer=None) -> str:
    """Render one question. template=plain: "[system\\n]question instruction\\n";
    template=chat: the tokenizer's chat template with the generation prompt appended."""
    user = f"{question} {prompt_cfg['instruction']}".strip()
    if prompt_cfg["template"] == "plain":
        system = prompt_cfg.get("system")
        return (f"{system}\n" if system else "") + user + "\n"
    if tokenizer is None or not getattr(tokenizer, "chat_template", None):
        raise ValueError(
            "prompt.template=chat needs a tokenizer with a chat template "
            "(the organism's word-level tokenizer has none: use prompt.template=plain)"
        )
    messages = (
        [{"role": "system", "content": prompt_cfg["system"]}] if prompt_cfg.get("system") else []
    )
    messages.append({"role": "user", "content": user})
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
