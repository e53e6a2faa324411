"""The Hugging Face hub's files in a run (Sec. 6: pi_ref = Qwen2.5-0.5B-Instruct, the data = GSM8K),
read from the local cache only: where each piece lies there, what the cache lacks of it, and the
readers every job uses.

Jobs never reach the hub. The workflow sets HF_HUB_OFFLINE=1 in every process it runs
(`use_cache`, also each SLURM job's, which loads the workflow again), and HF_HOME to hub.cache when
set, so a compute node without network runs exactly as one with it. What they read is fetched once,
before the run, at the revisions the configuration pins (model.revision, data.hub_revision), by the
prefetch (grpo_repro.prefetch: PREFETCH, whose start check names what the cache lacks).

A hub model is named in the jobs' params as "id@revision" (`spec`) and resolved in the job to its
snapshot folder in the cache (`local_dir`, through huggingface_hub's own `snapshot_download` with
local_files_only): every reader (the weights' hash, the tokenizer and its chat template, TRL's
reference model, which TRL reloads from the loaded model's own path, vLLM's engine or server) then
reads the same files at the pinned revision, never the hub's newest. A dataset's splits are saved by
the prefetch with `datasets`' own `save_to_disk`, one folder per (dataset, configuration, pinned
revision) under HF_HOME (`dataset_dir`), and read back with `load_from_disk` (`dataset_split`):
`load_dataset` offline would take the newest prepared copy, whatever the pinned revision.

The cache folders follow the environment as huggingface_hub and datasets read it (HF_HUB_CACHE,
HF_HOME, default ~/.cache/huggingface), computed when asked (`hub_dir`, `hf_home`), so they hold
even where a library was imported before HF_HOME was set.
"""

from __future__ import annotations

import os
from pathlib import Path

SEP = "@"  # "id@revision" (`spec`)
#: the files of a hub model a run reads: weights, configuration, tokenizer (Qwen2.5: vocab.json,
#: merges.txt, tokenizer.json, tokenizer_config.json with its chat template)
MODEL_PATTERNS = ["*.json", "*.safetensors", "*.txt"]
MODEL_NEEDS = ("config.json", "tokenizer_config.json")  # and one *.safetensors (`model_missing`)
DATASETS = "grpo_repro_datasets"  # the prefetched datasets' folder under HF_HOME (dataset_dir)
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


def snapshot(repo_id: str, revision: str | None) -> Path | None:
    """The cached snapshot folder of a hub model at `revision` (a commit hash, or a branch the
    cache has a ref for; None = main), or None when the cache has none (huggingface_hub's
    snapshot_download, local files only)."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        folder = snapshot_download(
            repo_id, revision=revision, cache_dir=str(hub_dir()), local_files_only=True
        )
    except LocalEntryNotFoundError:
        return None
    return Path(folder)


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


def dataset_dir(hub_id: str, config_name: str, revision: str | None, home=None) -> Path:
    """The folder of a hub dataset's splits at `revision` as the prefetch saves them
    (DatasetDict.save_to_disk; None: the revision the prefetch found newest, "main"), under
    `home` (default: HF_HOME, hf_home)."""
    root = Path(home) if home is not None else hf_home()
    return root / DATASETS / hub_id.replace("/", "--") / config_name / (revision or "main")


def _splits(hub_id: str, config_name: str, revision: str | None):
    """The saved DatasetDict (datasets.load_from_disk), or None when the folder holds none."""
    import datasets

    folder = dataset_dir(hub_id, config_name, revision)
    if not (folder / "dataset_dict.json").is_file():
        return None
    return datasets.load_from_disk(str(folder))


def dataset_missing(hub_id: str, config_name: str, revision: str | None, splits) -> list[str]:
    """What the cache lacks of the dataset's `splits` at `revision`, [] when complete."""
    saved = _splits(hub_id, config_name, revision)
    if saved is None:
        where = dataset_dir(hub_id, config_name, revision)
        return [f"{hub_id} ({config_name}) at revision {revision or 'main'} (nothing in {where})"]
    return [f"{hub_id}@{revision or 'main'}: split {s}" for s in splits if s not in saved]


def _saved(hub_id: str, config_name: str, revision: str | None):
    saved = _splits(hub_id, config_name, revision)
    if saved is None:
        raise HubError(
            f"the hub dataset {hub_id} ({config_name}) at revision {revision or 'main'} is not "
            f"in the local cache ({dataset_dir(hub_id, config_name, revision)}): fetch it on a "
            f"machine that reaches the hub with the prefetch "
            f"({PREFETCH.format(files='<your config files>')})"
        )
    return saved


def dataset_split(hub_id: str, config_name: str, revision: str | None, split: str):
    """One split of a hub dataset (a datasets.Dataset) at `revision`, as the prefetch saved it,
    offline; HubError naming the prefetch when it is not cached."""
    saved = _saved(hub_id, config_name, revision)
    if split not in saved:
        raise HubError(f"the hub dataset {hub_id} ({config_name}) has no split {split!r}")
    return saved[split]


def dataset_sizes(hub_id: str, config_name: str, revision: str | None) -> dict[str, int]:
    """{split: problems} of a cached hub dataset (HubError when not cached)."""
    return {name: len(d) for name, d in _saved(hub_id, config_name, revision).items()}
