"""Reference policy pi_ref of the organism (the analogue of Qwen2.5-0.5B-Instruct, Sec. 6): a small
transformers causal LM (organism.arch: a Llama with attention biases, Qwen2's math plus an output-
projection bias, the default; or Qwen2 itself), supervised fine-tuned with TRL's SFTTrainer on worked
solutions (prompt/completion data, loss on the completion only, EOS appended). Stopped after a fixed
number of steps chosen so that held-out success is partial. With organism.sft_steps 0 the random
initialisation is pi_ref (the rehearsal's stand-in for the hub model, grpo_repro.rehearsal, is such a
random byte-level BPE Qwen2: it checks that the paper's path
runs, not that it learns).
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path

from grpo_repro import io, provenance
from grpo_repro.data.sets import read_prompts
from grpo_repro.models import load_tokenizer, save_policy

#: organism.arch -> (config class, model class, settings beyond the shape). llama: attention biases
#: on q, k, v and o (Qwen2 has them on q, k, v); its checkpoints load with plain AutoTokenizer, which
#: for model_type qwen2 builds Qwen2Tokenizer whatever tokenizer_config.json declares (models.py)
ARCHS = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", {"attention_bias": True, "mlp_bias": False}),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {}),
}


def build_model(
    vocab_size: int,
    hidden: int,
    layers: int,
    heads: int,
    ffn: int,
    pad_id: int,
    bos_id: int,
    eos_id: int,
    max_len: int = 256,
    seed: int = 0,
    arch: str = "qwen2",
):
    """A randomly initialised causal LM of architecture `arch` (ARCHS) with tied embeddings and as
    many KV heads as heads (the organism's policy)."""
    import torch
    import transformers

    config_cls, model_cls, extra = ARCHS[arch]
    torch.manual_seed(seed)
    cfg = getattr(transformers, config_cls)(
        vocab_size=vocab_size,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        intermediate_size=ffn,
        max_position_embeddings=max_len,
        tie_word_embeddings=True,
        pad_token_id=pad_id,
        bos_token_id=bos_id,
        eos_token_id=eos_id,
        **extra,
    )
    return getattr(transformers, model_cls)(cfg)


@contextlib.contextmanager
def compact_lm_head():
    """Score only the positions that have labels in TRL's fused LM head, on CPU too: the same
    loss, 1.1-1.3x faster SFT steps (workflow/benchmarks/bench_train.py sft, 2-core CPU).

    TRL 1.16's fused head (trl.trainer.utils.add_fused_lm_head)
    scores every position on devices without Triton (`compact = _use_triton(...)`) although
    completion-only SFT needs the completion positions only (labels != -100); the prompt
    positions are scored and then zeroed. Patching the module-level `_use_triton` makes it take
    its own compact branch (hidden_states[mask], masked_scatter back); restored on exit."""
    import trl.trainer.utils as trl_utils

    original = trl_utils._use_triton
    trl_utils._use_triton = lambda device: True
    try:
        yield
    finally:
        trl_utils._use_triton = original


def organism_model(tok, org: dict, seed: int = 0):
    """The organism's policy before SFT (config section organism): its shape from `org`, its
    special ids from `tok`; a BPE tokenizer keeps Qwen2's context (data.bpe.MAX_POSITIONS)."""
    from grpo_repro.data.prepare import MAX_POSITIONS

    return build_model(
        len(tok),
        org["hidden"],
        org["layers"],
        org["heads"],
        org["ffn"],
        tok.pad_token_id,
        tok.bos_token_id,
        tok.eos_token_id,
        max_len=MAX_POSITIONS if org["tokenizer"] == "bpe" else 256,
        seed=seed,
        arch=org["arch"],
    )


def train_reference(
    records: list[dict],
    prompts: list[str],
    tokenizer,
    model,
    out_dir: str | Path,
    steps: int,
    batch: int,
    lr: float,
    seed: int,
    threads: int | None = None,
    bf16: bool = False,
) -> list[dict]:
    """SFT `model` on (prompt, answer) pairs (TRL state under out_dir); returns the log rows.
    bf16: bf16 autocast of the forward and backward (CPU: AVX512-BF16/AMX matmuls), float32
    master weights and optimizer."""
    import torch
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    if threads:
        torch.set_num_threads(threads)
    answers = [r.get("sft_answer", r["answer"]) for r in records]  # the noisy teacher's, if any
    data = Dataset.from_dict({"prompt": prompts, "completion": answers})
    # no truncation: the longest prompt + worked solution + EOS fits
    longest = max(len(tokenizer(p + "\n" + a)["input_ids"]) for p, a in zip(prompts, answers)) + 1
    out_dir = Path(out_dir)
    args = SFTConfig(
        output_dir=str(out_dir / "_sft_work"),
        max_steps=steps,
        per_device_train_batch_size=batch,
        learning_rate=lr,
        lr_scheduler_type="cosine",
        warmup_steps=min(30, steps // 10),
        weight_decay=0.01,
        max_length=longest,
        completion_only_loss=True,
        logging_steps=25,
        save_strategy="no",
        report_to=[],
        use_cpu=True,
        bf16=bool(bf16),
        seed=seed,
        data_seed=seed,
        dataloader_num_workers=0,
        gradient_checkpointing=False,
        disable_tqdm=True,
    )
    trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tokenizer)
    with compact_lm_head():
        trainer.train()
    return [row for row in trainer.state.log_history if "loss" in row]


def run(
    train_path,
    tokenizer_dir,
    model_dir,
    log_csv,
    run_json,
    seed: int,
    organism: dict,
    threads: int = 1,
) -> dict:
    """The rule train_reference: build the organism's model, SFT it on the training split, save
    pi_ref (model + tokenizer + organism.json), its SFT log (CSV) and run record (JSON)."""
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    tok = load_tokenizer(tokenizer_dir)
    records = read_prompts(train_path)
    org = organism
    model = organism_model(tok, org, seed)
    n_params = sum(p.numel() for p in model.parameters())
    out = Path(model_dir)
    t0 = time.time()
    log = []  # sft_steps 0: pi_ref is the random initialisation
    if org["sft_steps"] > 0:
        log = train_reference(
            records,
            [r["prompt"] for r in records],
            tok,
            model,
            out.parent / "_sft_work",
            org["sft_steps"],
            org["sft_batch"],
            org["sft_lr"],
            seed,
            threads,
        )
    seconds = time.time() - t0
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    save_policy(model, tok, out, marker={"organism": org, "parameters": n_params})
    io.write_rows(log_csv, log, None if log else ["step", "loss"])
    config = {"seed": seed, "organism": org}
    io.write_json(
        run_json,
        {
            "stage": "train_reference",
            "parameters": n_params,
            "seconds": seconds,
            **provenance.record(config, inputs=[train_path]),
        },
    )
    summary = {
        "parameters": n_params,
        "sft_seconds": round(seconds, 1),
        "final": log[-1] if log else None,
    }
    print(json.dumps(summary))
    return summary
