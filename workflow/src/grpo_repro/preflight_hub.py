"""Preflight of the hub (grpo_repro.preflight, `check_at_start`): the hub model and dataset a run
downloads are cached or reachable now; each failure names its config key (model.name_or_path, or
the data path key that is null) and how to run without the hub."""

from __future__ import annotations

import os

HUB_TIMEOUT_S = 15  # seconds to wait for the hub before calling it unreachable


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE") == "1"


def hub_errors(config: dict) -> list[tuple[list, str]]:
    """The hub model and dataset a run downloads are cached or reachable now (online runs; an
    offline run's cache is checked when the workflow loads, grpo_repro.data.sets.check_sources)."""
    from grpo_repro.models import is_local

    found = []
    model = config["model"]["name_or_path"]
    if model is not None and not is_local(model) and not _offline():
        from huggingface_hub import try_to_load_from_cache

        if try_to_load_from_cache(model, "config.json") is None:
            why = _unreachable("model", model)
            if why:
                found.append(
                    (
                        ["model", "name_or_path"],
                        f"the hub model '{model}' is not in the local cache and cannot be "
                        f"fetched ({why}): download it where the hub is reachable "
                        f"(`huggingface-cli download {model} --local-dir models/...`) and set "
                        "model.name_or_path to that directory",
                    )
                )
    from grpo_repro.data.sources import source

    data, src = config["data"], source(config)
    hub_id = src.hub_id(data)
    missing = [src.path_keys[split] for split, path in src.paths(data).items() if path is None]
    if hub_id is not None and not _offline():
        why = _unreachable("dataset", hub_id)
        if why:
            found.append(
                (
                    ["data", missing[0]],
                    f"is null, so {src.title} comes from the hub dataset '{hub_id}' "
                    f"(data.hub_id), which cannot be reached ({why}): set "
                    + " and ".join(f"data.{k}" for k in missing)
                    + f" to local JSONL files ({src.file_format})",
                )
            )
    return found


def _unreachable(kind: str, repo_id: str) -> str | None:
    """None if the hub answers for `repo_id`, else why not."""
    import huggingface_hub

    info = huggingface_hub.model_info if kind == "model" else huggingface_hub.dataset_info
    try:
        info(repo_id, timeout=HUB_TIMEOUT_S)
    except Exception as err:  # offline, DNS, proxy, 401/404, gated: all mean "cannot fetch"
        return f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}".strip()
    return None
