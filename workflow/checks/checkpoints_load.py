"""Every checkpoint of a run loads with plain transformers (AutoTokenizer, AutoModelForCausalLM) in
a fresh interpreter and reproduces the pipeline's tokenization and greedy completions
(grpo_repro.models.save_policy's directories; tests/unit/test_checkpoint_loading.py checks the same
on tiny models).

For pi_ref and every GRPO checkpoint under --results, greedy-decodes the first --n prompts of
--prompts twice: with AutoTokenizer + AutoModelForCausalLM.generate in a child process that imports
nothing of this project, and with the pipeline's load_policy + batched sampler; prints per
checkpoint whether the token ids and completions agree and exits 1 if any does not.

Usage: .venv/bin/python workflow/checks/checkpoints_load.py [--results results]
         [--prompts results/data/test.jsonl] [--n 20] [--max-new-tokens 24]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

NOTEBOOK = """
import json, sys
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
torch.set_num_threads(1)
paths, prompts, n_new = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
res = []
for path in paths:
    try:
        tok = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path).eval()
        ids, comps = [], []
        for p in prompts:
            enc = tok(p, return_tensors="pt")
            with torch.no_grad():
                gen = model.generate(**enc, do_sample=False, max_new_tokens=n_new)
            ids.append(enc["input_ids"][0].tolist())
            comps.append(gen[0, enc["input_ids"].shape[1]:].tolist())
        res.append({"class": type(tok).__name__, "ids": ids, "completions": comps})
    except Exception as e:  # reported per checkpoint, the others still checked
        res.append({"error": f"{type(e).__name__}: {str(e)[:300]}"})
print(json.dumps(res))
"""


def plain_transformers(paths, prompts, n_new):
    run = subprocess.run(
        [sys.executable, "-c", NOTEBOOK, json.dumps([str(p) for p in paths]),
         json.dumps(prompts), str(n_new)],
        capture_output=True, text=True,
        env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    if run.returncode:
        sys.exit(f"plain transformers could not run:\n{run.stderr[-2000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def pipeline(path, prompts, n_new):
    from grpo_repro.models import load_policy
    from grpo_repro.sampler.hf import HFSampler
    from grpo_repro.sampler.params import SamplingParams

    model, tok = load_policy(path)
    out = HFSampler(model, tok).sample(
        prompts, 1, SamplingParams(temperature=0.0, max_new_tokens=n_new), list(range(len(prompts)))
    )
    comps = [out.tokens[i, 0, : out.lengths[i, 0]].tolist() for i in range(len(prompts))]
    return [tok(p)["input_ids"] for p in prompts], comps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--results", default="results")
    ap.add_argument("--prompts", default=None, help="default: <results>/data/test.jsonl")
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--max-new-tokens", type=int, default=24)
    a = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    results = Path(a.results)
    prompts_file = Path(a.prompts or results / "data" / "test.jsonl")
    prompts = [json.loads(x)["prompt"] for x in prompts_file.open()][: a.n]
    paths = [results / "train" / "ref" / "model"]
    paths += sorted(
        results.glob("train/*/seed_*/checkpoints/step_*"),
        key=lambda p: (str(p.parent), int(p.name.split("_")[1])),
    )
    bad = 0
    for path, nb in zip(paths, plain_transformers(paths, prompts, a.max_new_tokens)):
        if "error" in nb:
            bad += 1
            print(f"FAIL {path} (plain transformers cannot load it: {nb['error']})")
            continue
        ids, comps = pipeline(path, prompts, a.max_new_tokens)
        same_ids = nb["ids"] == ids
        # generate() pads after EOS; the sampler stops at it
        same = same_ids and all(g[: len(w)] == w for g, w in zip(nb["completions"], comps))
        bad += not same
        print(f"{'ok  ' if same else 'DIFF'} {path} ({nb['class']}; ids equal: {same_ids})")
    print(f"{len(paths) - bad} of {len(paths)} checkpoints load with AutoTokenizer and "
          f"AutoModelForCausalLM and reproduce the pipeline's greedy completions of {len(prompts)} prompts")  # fmt: skip
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
