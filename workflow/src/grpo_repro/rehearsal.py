"""The dress rehearsal of the paper's run (config/paper.yaml, Sec. 6) on a CPU: the same configuration,
rules, scripts and hub paths, smaller.

config/rehearsal.yaml may change only two kinds of keys, both named here and checked by
tests/unit/test_rehearsal.py: SIZE_KEYS (the model's width and depth, data counts, steps, samples)
and CPU_KEYS (what a CPU forces: devices, bf16, vLLM's platform and mode; server mode's NCCL weight
sync needs GPUs). config/rehearsal_hf.yaml, for an environment without vLLM, changes NO_VLLM_KEYS
only.

The hub stays: `build_cache` writes a throwaway Hugging Face cache (HF_HOME of the rehearsal's own,
never the user's) holding, under the paper's ids and pinned revisions, a stand-in for each hub file
the run reads: a small random Qwen2 (the organism's width and depth from the rehearsal's keys) with
a byte-level BPE tokenizer carrying Qwen2.5's chat template and Qwen2.5's generation_config.json
defaults, under model.name_or_path; GSM8K's shipped excerpt (workflow/resources/gsm8k) saved as the
prefetch saves openai/gsm8k (grpo_repro.hub.dataset_dir). With HF_HUB_OFFLINE=1 every hub path then
runs as on a cluster after the prefetch: the model's snapshot, its hash, tokenizer and chat
template, TRL's reference reload, vLLM's model load, the dataset's saved splits. The stand-in's tokenizer is small: memory
that scales with Qwen2.5's 151,936-token vocabulary is not exercised here (the KL's chunking is
shown from the shapes instead, grpo_repro.fixed_point.kl, and measured by
workflow/benchmarks/gpu_paper_scale.py on a GPU).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

#: the keys config/rehearsal.yaml may set to make the paper's run small (dotted config keys; the
#: figures' grid and oracle sizes: points, prompts, iterations, never a range or a value)
SIZE_KEYS = (
    "organism.hidden",
    "organism.layers",
    "organism.heads",
    "organism.ffn",
    "organism.bpe_vocab_size",
    "data.n_train",
    "data.n_test",
    "data.train_pool",
    "train.prompts_per_step",
    "train.max_steps",
    "train.save_steps",
    "eval.samples",
    "eval.temperatures",
    "zero.samples",
    "zero.screen_train",
    "zero.max_candidates",
    "fixed_point.n_prompts",
    "fixed_point.ref_samples",
    "fixed_point.samples",
    "fixed_point.kl_samples",
    "fixed_point.compact.max_steps",
    "fixed_point.compact.save_steps",
    "fixed_point.compact.samples",
    "figures.map_beta.n",
    "figures.map_p_ref.n",
    "figures.bif_beta.n",
    "figures.p_star_g_p_ref.n",
    "figures.oracle.n_prompts",
    "figures.oracle.n_iter",
    "figures.oracle.n_iter_optimiser",
)
#: the keys a CPU forces on the paper's run (one process, float32, vLLM's CPU backend in colocate mode)
CPU_KEYS = ("train.devices", "train.bf16", "train.vllm_mode", "vllm.platform")
#: the keys an environment without vLLM forces (config/rehearsal_hf.yaml: the HF sampler)
NO_VLLM_KEYS = ("train.use_vllm", "eval.backend")

MARKER = "grpo_repro_rehearsal.json"  # marks a cache folder as the rehearsal's own
EXCERPT = Path(__file__).resolve().parents[2] / "resources" / "gsm8k"  # workflow/resources/gsm8k
#: Qwen2.5-0.5B-Instruct's generation_config.json sampling defaults (vLLM's server applies a model's
#: defaults to requests that leave a field out: the run must set every field itself)
GENERATION_DEFAULTS = {
    "do_sample": True,
    "temperature": 0.7,
    "top_p": 0.8,
    "top_k": 20,
    "repetition_penalty": 1.1,
}


def overlay_keys(overlay: dict, prefix: str = "") -> list[str]:
    """The dotted keys an overlay sets (a mapping is entered, any other value is a key)."""
    keys = []
    for k, v in overlay.items():
        dotted = f"{prefix}{k}"
        keys += overlay_keys(v, dotted + ".") if isinstance(v, dict) else [dotted]
    return keys


def foreign_keys(overlay: dict, allowed) -> list[str]:
    """The keys of `overlay` outside `allowed` ([] for a rehearsal overlay that keeps to them)."""
    return [k for k in overlay_keys(overlay) if k not in set(allowed)]


class RehearsalError(ValueError):
    """The rehearsal's cache would go where it must not (the user's cache)."""


def _guard(hf_home: Path, user_home: Path) -> None:
    """Refuse a folder that is not the rehearsal's own: the user's Hugging Face cache, or any
    non-empty folder without the rehearsal's marker (a random model under a real model's id must
    never reach a real cache)."""
    if hf_home.resolve() == user_home.resolve():
        raise RehearsalError(
            f"{hf_home} is this environment's Hugging Face cache (HF_HOME): the rehearsal writes "
            "random models under real ids, into a folder of its own only"
        )
    if hf_home.exists() and any(hf_home.iterdir()) and not (hf_home / MARKER).is_file():
        raise RehearsalError(
            f"{hf_home} holds files and is not a rehearsal cache (no {MARKER}): the rehearsal "
            "writes into an empty folder of its own"
        )


def build_cache(config: dict, hf_home: str | Path, user_home: str | Path | None = None) -> dict:
    """Write the stand-ins of every hub file the configuration reads (grpo_repro.prefetch.needs) into
    the cache at `hf_home` (the hub's models and the prefetched datasets below it), replacing the rehearsal's previous ones;
    `user_home`: the cache it must not be (default: this environment's HF_HOME). Returns what it
    wrote: {kind: {"id", "revision", "folder"}}."""
    import os

    from grpo_repro.prefetch import needs

    hf_home = Path(hf_home).absolute()
    user = user_home or os.environ.get("HF_HOME") or Path("~/.cache/huggingface").expanduser()
    _guard(hf_home, Path(user))
    shutil.rmtree(hf_home, ignore_errors=True)
    hf_home.mkdir(parents=True)
    (hf_home / MARKER).write_text(json.dumps({"config_ids": [n.repo_id for n in needs(config)]}))
    written = {}
    for need in needs(config):
        if need.kind == "model":
            folder = _model(config, hf_home / "hub", need.repo_id, need.revision)
        else:
            folder = _dataset(hf_home, need)
        written[need.kind] = {"id": need.repo_id, "revision": folder.name, "folder": str(folder)}
    return written


def _excerpt(split: str) -> list[dict]:
    from grpo_repro.data.source_records.gsm8k import read_jsonl

    return read_jsonl(EXCERPT / f"{split}.jsonl")


def _model(config: dict, cache: Path, repo_id: str, revision: str | None) -> Path:
    """The stand-in pi_ref as a hub snapshot, snapshots/<revision>/, as the prefetch leaves it: a
    revision pinned by its commit hash gets no refs/main (huggingface_hub writes a ref only for a
    branch or tag), so a reader that forgets the revision fails here as on a cluster; unpinned,
    refs/main names the snapshot."""
    from grpo_repro.data.prepare import build_bpe_tokenizer
    from grpo_repro.models import save_policy
    from grpo_repro.train.sft import organism_model

    org = config["organism"]
    texts = [t for r in _excerpt("train") for t in (r["question"], r["answer"])]
    tok = build_bpe_tokenizer(texts, org["bpe_vocab_size"])
    model = organism_model(tok, org, config["seed"])
    gen = model.generation_config
    gen.update(**GENERATION_DEFAULTS)
    gen.eos_token_id, gen.pad_token_id = [tok.eos_token_id, tok.pad_token_id], tok.pad_token_id
    commit = revision or "0" * 40
    repo = cache / f"models--{repo_id.replace('/', '--')}"
    folder = repo / "snapshots" / commit
    folder.parent.mkdir(parents=True, exist_ok=True)
    save_policy(model, tok, folder)  # no organism marker: it loads as a hub Qwen2 does
    if revision is None:
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / "main").write_text(commit)
    return folder


def _dataset(hf_home: Path, need) -> Path:
    """The excerpt's splits saved where the prefetch saves the hub dataset at its revision
    (grpo_repro.hub.dataset_dir, `datasets`' save_to_disk)."""
    import datasets

    from grpo_repro.hub import dataset_dir

    folder = dataset_dir(need.repo_id, need.config_name, need.revision, hf_home)
    splits = {
        s: datasets.Dataset.from_list([{"question": r["question"], "answer": r["answer"]}
                                       for r in _excerpt(s)])
        for s in ("train", "test")
    }  # fmt: skip
    datasets.DatasetDict(splits).save_to_disk(str(folder))
    return folder
