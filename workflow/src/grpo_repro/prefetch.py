"""The prefetch (Sec. 6's pi_ref and GSM8K): what a configuration reads from the Hugging Face hub
(`needs`), what the local cache lacks of it (`missing`, part of the run's start check
`check_at_start`), and the download that fills the cache at the pinned revisions
(`prefetch`), run once where the hub is reachable (a login node), into storage the compute nodes
see:

    python -m grpo_repro.prefetch --configfile config/paper.yaml [overlays]

Jobs then read the cache offline (grpo_repro.hub).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from grpo_repro import config as cfg
from grpo_repro import preflight
from grpo_repro.hub import (
    MODEL_PATTERNS,
    PREFETCH,
    dataset_dir,
    dataset_missing,
    hf_home,
    hub_dir,
    is_local,
    model_missing,
)


@dataclass(frozen=True)
class Need:
    """One repository a run reads from the hub: a model, or a dataset's splits."""

    kind: str  # "model" | "dataset"
    repo_id: str
    revision: str | None
    keys: tuple[str, str]  # the config key that names it
    config_name: str | None = None  # a dataset's configuration (GSM8K: main)
    splits: tuple[str, ...] = ()

    def missing(self) -> list[str]:
        if self.kind == "model":
            return model_missing(self.repo_id, self.revision)
        return dataset_missing(self.repo_id, self.config_name, self.revision, self.splits)


def needs(config: dict) -> list[Need]:
    """What the configuration reads from the hub: pi_ref given by hub id, and the splits of a file
    source (GSM8K) whose local path is null (grpo_repro.data.sources)."""
    from grpo_repro.data.sources import source

    found = []
    model = config["model"]
    name = model["name_or_path"]
    if name is not None and not is_local(name):
        found.append(Need("model", name, model.get("revision"), ("model", "name_or_path")))
    data, src = config["data"], source(config)
    hub_id = src.hub_id(data)
    if hub_id is not None:
        splits = tuple(s for s, p in src.paths(data).items() if p is None)
        key = ("data", src.path_keys[splits[0]])
        found.append(Need("dataset", hub_id, data.get("hub_revision"), key, src.hub_config, splits))
    return found


def missing(config: dict, files=()) -> list[tuple[list, str]]:
    """(config key, message) for each piece of the hub that the run reads and the local cache
    lacks, each naming the prefetch command (the run's start check, check_at_start)."""
    command = PREFETCH.format(files=" ".join(map(str, files)) or "<your config files>")
    found = []
    for need in needs(config):
        lacking = need.missing()
        if lacking:
            found.append(
                (
                    list(need.keys),
                    f"the run reads the hub {need.kind} '{need.repo_id}' and the local cache "
                    f"lacks {'; '.join(lacking)}. Jobs never reach the hub (HF_HUB_OFFLINE=1): fetch "
                    f"it first, where the hub is reachable, with `{command}` (into hub.cache, or "
                    "HF_HOME: a folder the compute nodes see), or give local files",
                )
            )
    return found


def prefetch(config: dict) -> list[dict]:
    """Download what the configuration reads from the hub (`needs`) and the local cache lacks, at
    the pinned revisions; returns what was fetched (kind, id, the commit it resolved to, folder)."""
    fetched = []
    for need in needs(config):
        if not need.missing():
            continue
        if need.kind == "model":
            from huggingface_hub import snapshot_download

            folder = snapshot_download(
                need.repo_id,
                revision=need.revision,
                cache_dir=str(hub_dir()),
                allow_patterns=MODEL_PATTERNS,
            )
        else:
            import datasets

            # the splits at the pinned revision, saved as `datasets` saves them (hub.dataset_dir)
            found = datasets.load_dataset(need.repo_id, need.config_name, revision=need.revision)
            folder = dataset_dir(need.repo_id, need.config_name, need.revision)
            datasets.DatasetDict({s: found[s] for s in need.splits}).save_to_disk(str(folder))
        folder = Path(folder)
        fetched.append(
            {"kind": need.kind, "id": need.repo_id, "revision": folder.name, "folder": str(folder)}
        )  # a model's folder is its snapshot, named by the commit it resolved to
    return fetched


def check_at_start(config: dict, local: bool, files: Iterable[str | Path] = ()) -> None:
    """When a run starts (before any job; workflow/rules/common.smk `on_start`): the software and
    what the run reads from the hub in the local cache (`missing`: jobs never reach the hub),
    always; the device (grpo_repro.preflight) only when the jobs run on this
    machine (`local`: a local executor, not a cluster's). Raises PreflightError naming each key
    with the file and line that set it."""
    files = list(files)
    errors = preflight.software_errors(config) + missing(config, files[1:])
    if local:
        errors += preflight.device_errors(config)
    if errors:
        raise preflight.PreflightError(
            cfg.described(errors, files, config, "this run cannot start")
        )


def main(argv: list[str] | None = None) -> int:
    """`python -m grpo_repro.prefetch --configfile FILE...`: the prefetch. Run it where the hub is
    reachable (a login node), with hub.cache or HF_HOME naming storage the compute nodes see."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m grpo_repro.prefetch", description=main.__doc__)
    ap.add_argument("--configfile", nargs="+", default=[], help="as snakemake's --configfile")
    a = ap.parse_args(argv)
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", ""):
        print("HF_HUB_OFFLINE is set: the prefetch needs the hub; unset it here", file=sys.stderr)
        return 2
    try:
        config = cfg.load(*a.configfile)
    except cfg.ConfigError as err:
        print(err, file=sys.stderr)
        return 1
    cache = config["hub"]["cache"]
    if cache:
        os.environ["HF_HOME"] = str(Path(cache).expanduser().absolute())
    if not needs(config):
        print("this configuration reads nothing from the hub")
        return 0
    try:
        fetched = prefetch(config)
    except Exception as err:  # unreachable hub, unknown revision, no access (gated)
        print(
            f"the prefetch failed ({type(err).__name__}: {str(err).splitlines()[0]}): run it on a "
            "machine that reaches the hub (huggingface.co), with the revision the configuration "
            "pins (model.revision, data.hub_revision)",
            file=sys.stderr,
        )
        return 1
    for got in fetched:
        print(f"{got['kind']} {got['id']} at {got['revision']}: {got['folder']}")
    lacking = [m for need in needs(config) for m in need.missing()]
    if lacking:
        print("still missing: " + "; ".join(lacking), file=sys.stderr)
        return 1
    print(f"the cache ({hf_home()}) holds everything the run reads from the hub")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
