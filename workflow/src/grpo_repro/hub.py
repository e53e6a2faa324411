"""The Hugging Face hub's files in a run (Sec. 6: pi_ref = Qwen2.5-0.5B-Instruct, the data = GSM8K),
read from the local cache only: where each piece lies there, what the cache lacks of it, and the
readers every job uses.

Jobs never reach the hub. The workflow sets HF_HUB_OFFLINE=1 in every process it runs
(`use_cache`, also each SLURM job's, which loads the workflow again), and HF_HOME to hub.cache when
set, so a compute node without network runs exactly as one with it. What they read is fetched once,
before the run, at the revisions the configuration pins (model.revision, data.hub_revision), by the
prefetch (grpo_repro.prefetch: PREFETCH, whose start check names what the cache lacks).

A hub model is named in the jobs' params as "id@revision" (`spec`) and resolved in the job to its
snapshot folder in the cache (`local_dir`): every reader (the weights' hash, the tokenizer and its
chat template, TRL's reference model, which TRL reloads from the loaded model's own path, vLLM's
engine or server) then reads the same files at the pinned revision, never the hub's newest. A
dataset split is read from `datasets`' prepared cache at the pinned revision (`dataset_split`: the
builder `load_dataset` uses offline, with the revision named instead of the newest found).

The cache folders follow the environment as huggingface_hub and datasets read it (HF_HUB_CACHE,
HF_DATASETS_CACHE, HF_HOME, default ~/.cache/huggingface), computed when asked (`hub_dir`,
`datasets_dir`), so they hold even where a library was imported before HF_HOME was set.
"""

from __future__ import annotations

import os
from pathlib import Path

SEP = "@"  # "id@revision" (`spec`)
#: the files of a hub model a run reads: weights, configuration, tokenizer (Qwen2.5: vocab.json,
#: merges.txt, tokenizer.json, tokenizer_config.json with its chat template)
MODEL_PATTERNS = ["*.json", "*.safetensors", "*.txt"]
MODEL_NEEDS = ("config.json", "tokenizer_config.json")  # and one *.safetensors (`model_missing`)
DATASET_VERSION = "0.0.0"  # `datasets`' version folder of a hub dataset without a script
PREFETCH = (
    "python -m grpo_repro.prefetch --configfile {files}"  # fills the cache (grpo_repro.prefetch)
)


class HubError(ValueError):
    """Something a run reads from the hub is not in the local cache; the message says what and how
    to fetch it."""


def hf_home() -> Path:
    return Path(os.environ.get("HF_HOME") or Path("~/.cache/huggingface")).expanduser()


def hub_dir() -> Path:
    """huggingface_hub's cache of repositories (HF_HUB_CACHE, else HF_HOME/hub)."""
    return Path(os.environ.get("HF_HUB_CACHE") or hf_home() / "hub").expanduser()


def datasets_dir() -> Path:
    """`datasets`' cache of prepared datasets (HF_DATASETS_CACHE, else HF_HOME/datasets)."""
    return Path(os.environ.get("HF_DATASETS_CACHE") or hf_home() / "datasets").expanduser()


def use_cache(config: dict) -> None:
    """Every process of the run reads the hub's files from the cache only: HF_HUB_OFFLINE=1, and
    HF_HOME = hub.cache when the configuration sets it (before any hub library reads them)."""
    cache = config.get("hub", {}).get("cache")
    if cache:
        os.environ["HF_HOME"] = str(Path(cache).expanduser().absolute())
    os.environ["HF_HUB_OFFLINE"] = "1"


def is_local(name_or_path: str) -> bool:
    """A filesystem path (absolute, ./ ~/, or existing), not a hub id."""
    return (
        os.path.isabs(name_or_path)
        or name_or_path.startswith((".", "~"))
        or Path(name_or_path).exists()
    )


def spec(model: dict) -> str:
    """pi_ref as the jobs name it (config section `model`): a local directory as given, a hub id
    with its pinned revision as "id@revision" (model.revision null: the id alone, the cache's main)."""
    name, rev = model["name_or_path"], model.get("revision")
    return name if is_local(name) or not rev else f"{name}{SEP}{rev}"


def _repo_dir(repo_id: str, kind: str = "models") -> Path:
    return hub_dir() / f"{kind}--{repo_id.replace('/', '--')}"


def snapshot(repo_id: str, revision: str | None) -> Path | None:
    """The cached snapshot folder of a hub model at `revision` (a commit hash, or a branch the
    cache has a ref for; None = main), or None when the cache has none."""
    repo = _repo_dir(repo_id)
    rev = revision or "main"
    ref = repo / "refs" / rev
    commit = ref.read_text().strip() if ref.is_file() else rev
    folder = repo / "snapshots" / commit
    return folder if folder.is_dir() else None


def model_missing(repo_id: str, revision: str | None) -> list[str]:
    """What the cache lacks of a hub model at `revision` (files the run reads), [] when complete."""
    folder = snapshot(repo_id, revision)
    if folder is None:
        return [f"{repo_id} at revision {revision or 'main'} (no snapshot in {hub_dir()})"]
    lacking = [f for f in MODEL_NEEDS if not (folder / f).is_file()]
    if not any(folder.glob("*.safetensors")):
        lacking.append("*.safetensors (the weights)")
    return [f"{repo_id}@{folder.name}: {f}" for f in lacking]


def local_dir(ref: str | Path) -> Path:
    """The folder holding pi_ref's files: a local directory as is; a hub spec "id@revision" its
    snapshot in the cache (HubError naming what is missing and the prefetch otherwise)."""
    ref = str(ref)
    if is_local(ref):
        return Path(ref).expanduser()
    repo_id, _, rev = ref.partition(SEP)
    rev = rev or None
    lacking = model_missing(repo_id, rev)
    if lacking:
        raise HubError(
            f"the hub model {ref} is not complete in the local cache ({'; '.join(lacking)}): "
            "fetch it on a machine that reaches the hub with the prefetch "
            f"({PREFETCH.format(files='<your config files>')}), into the cache the jobs read "
            "(hub.cache or HF_HOME)"
        )
    return snapshot(repo_id, rev)


def revision_of(ref: str | Path) -> str | None:
    """The commit hash a model spec resolves to in the cache (None for a local directory)."""
    if is_local(str(ref)):
        return None
    return local_dir(ref).name


# ---------------------------------------------------------------- datasets


def _dataset_root(hub_id: str, config_name: str) -> Path:
    owner, _, name = hub_id.rpartition("/")
    folder = f"{owner}___{name}" if owner else name
    return datasets_dir() / folder / config_name / DATASET_VERSION


def dataset_folder(hub_id: str, config_name: str, revision: str | None) -> Path | None:
    """The prepared folder of a hub dataset at `revision` in `datasets`' cache (revision None: the
    newest prepared, as `load_dataset` picks offline), or None when there is none."""
    root = _dataset_root(hub_id, config_name)
    if revision:
        folder = root / revision
        return folder if (folder / "dataset_info.json").is_file() else None
    found = [p for p in root.glob("*") if (p / "dataset_info.json").is_file()]
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def dataset_missing(hub_id: str, config_name: str, revision: str | None, splits) -> list[str]:
    """What `datasets`' cache lacks of the dataset's `splits` at `revision`, [] when complete."""
    import json

    folder = dataset_folder(hub_id, config_name, revision)
    if folder is None:
        where = _dataset_root(hub_id, config_name)
        return [f"{hub_id} ({config_name}) at revision {revision or 'any'} (nothing in {where})"]
    info = json.loads((folder / "dataset_info.json").read_text())
    have = set(info.get("splits") or {})
    return [f"{hub_id}@{folder.name}: split {s}" for s in splits if s not in have]


def _cache_builder(hub_id: str, config_name: str, revision: str | None):
    from datasets.packaged_modules.cache.cache import Cache

    folder = dataset_folder(hub_id, config_name, revision)
    if folder is None:
        raise HubError(
            f"the hub dataset {hub_id} ({config_name}) at revision {revision or 'any'} is not in "
            f"the local cache ({datasets_dir()}): fetch it on a machine that reaches the hub with "
            f"the prefetch ({PREFETCH.format(files='<your config files>')})"
        )
    return Cache(
        cache_dir=str(datasets_dir()),
        dataset_name=hub_id.rpartition("/")[2],
        repo_id=hub_id,
        config_name=config_name,
        version=DATASET_VERSION,
        hash=folder.name,
    )


def dataset_split(hub_id: str, config_name: str, revision: str | None, split: str):
    """One split of a hub dataset (a datasets.Dataset) from `datasets`' prepared cache at `revision`
    (None: the newest prepared), offline; HubError naming the prefetch when it is not cached."""
    return _cache_builder(hub_id, config_name, revision).as_dataset(split=split)


def dataset_sizes(hub_id: str, config_name: str, revision: str | None) -> dict[str, int]:
    """{split: problems} of a cached hub dataset, from its metadata (HubError when not cached)."""
    info = _cache_builder(hub_id, config_name, revision).info
    return {name: int(s.num_examples) for name, s in (info.splits or {}).items()}
