"""Reference policy pi_ref of the organism: supervised fine-tuning on worked solutions with TRL's
SFTTrainer (prompt/completion data, loss on the completion only, EOS appended). Stopped after a
fixed number of steps chosen so that held-out success is partial (most prompts 0 < p_ref < 1).
"""

from __future__ import annotations

from pathlib import Path


def train_reference(records: list[dict], prompts: list[str], tokenizer, model, out_dir: str | Path,
                    steps: int, batch: int, lr: float, seed: int, threads: int | None = None) -> list[dict]:
    """SFT `model` on (prompt, answer) pairs; saves model + tokenizer to out_dir; returns the log."""
    import torch
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    if threads:
        torch.set_num_threads(threads)
    data = Dataset.from_dict({"prompt": prompts, "completion": [r["answer"] for r in records]})
    # no truncation: the longest prompt + worked solution + EOS fits
    longest = max(len(tokenizer(p + "\n" + r["answer"])["input_ids"]) for p, r in zip(prompts, records)) + 1
    out_dir = Path(out_dir)
    args = SFTConfig(
        output_dir=str(out_dir / "_sft_work"), max_steps=steps, per_device_train_batch_size=batch,
        learning_rate=lr, lr_scheduler_type="cosine", warmup_steps=min(30, steps // 10),
        weight_decay=0.01, max_length=longest, completion_only_loss=True, logging_steps=25,
        save_strategy="no", report_to=[], use_cpu=True, bf16=False, seed=seed, data_seed=seed,
        dataloader_num_workers=0, gradient_checkpointing=False, disable_tqdm=True,
    )
    trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tokenizer)
    trainer.train()
    return [row for row in trainer.state.log_history if "loss" in row]
