"""Stage 3a: prompt sets (Sec. 6). Organism: generate problems and build the word-level tokenizer;
GSM8K: load the splits (hub or local JSONL). Writes train/test/train_pool JSONL with rendered prompts."""

import json
import sys
from grpo_repro import data, gsm8k

sm = snakemake  # noqa: F821 (injected by Snakemake)
sys.stderr = sys.stdout = open(sm.log[0], "w")
config = sm.config
train, test = data.raw_records(config)
tokenizer = None
if config["data"]["source"] == "organism":
    from grpo_repro.organism.tokenizer import build_tokenizer

    rendered = [data.format_prompt(r["question"], config["prompt"]) for r in train + test]
    tokenizer = build_tokenizer(rendered + [r["answer"] for r in train + test], config["organism"]["max_value"])
    tokenizer.save_pretrained(sm.output.tokenizer)
else:
    from grpo_repro.models import load_tokenizer

    tokenizer = load_tokenizer(config["model"]["name_or_path"])
    tokenizer.save_pretrained(sm.output.tokenizer)  # a record of the tokenizer that rendered the prompts
train, test = data.render(train, config["prompt"], tokenizer), data.render(test, config["prompt"], tokenizer)
pool = data.train_pool(train, config["data"]["train_pool"], config["seed"])
for recs, path in ((train, sm.output.train), (test, sm.output.test), (pool, sm.output.pool)):
    gsm8k.write_jsonl(recs, path)
print(json.dumps({"train": len(train), "test": len(test), "train_pool": len(pool)}))
