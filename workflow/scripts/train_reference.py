"""Stage 3b: the organism's reference policy pi_ref, SFT on worked solutions (Sec. 6 analogue)."""

import csv
import json
import sys
import time
from pathlib import Path

import torch

from grpo_repro import gsm8k, provenance
from grpo_repro.models import load_tokenizer
from grpo_repro.organism.model import build_model
from grpo_repro.sft import train_reference
from grpo_repro.train_grpo import save_policy

sm = snakemake  # noqa: F821 (injected by Snakemake)
sys.stderr = sys.stdout = open(sm.log[0], "w")
config, org = sm.config, sm.config["organism"]
torch.set_num_threads(sm.threads)
torch.manual_seed(config["seed"])
tok = load_tokenizer(sm.input.tokenizer)
records = gsm8k.read_jsonl(sm.input.train)
model = build_model(len(tok), org["hidden"], org["layers"], org["heads"], org["ffn"],
                    tok.pad_token_id, tok.bos_token_id, tok.eos_token_id, seed=config["seed"])
n_params = sum(p.numel() for p in model.parameters())
out = Path(sm.output.model)
t0 = time.time()
log = train_reference(records, [r["prompt"] for r in records], tok, model, out.parent / "_sft_work",
                      org["sft_steps"], org["sft_batch"], org["sft_lr"], config["seed"], sm.threads)
seconds = time.time() - t0
model.generation_config.eos_token_id = tok.eos_token_id
model.generation_config.pad_token_id = tok.pad_token_id
save_policy(model, tok, out, marker={"organism": org, "parameters": n_params})
with open(sm.output.log_csv, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=sorted({k for r in log for k in r}))
    w.writeheader()
    w.writerows(log)
provenance.write_json(sm.output.run, {"stage": "train_reference", "parameters": n_params, "seconds": seconds,
                                      **provenance.record(config, inputs=[sm.input.train])})
print(json.dumps({"parameters": n_params, "sft_seconds": round(seconds, 1), "final": log[-1]}))
