"""Provenance written next to every artifact: the resolved configuration, package versions and
input hashes, so that any difference between two runs can be traced."""

from __future__ import annotations

import hashlib
import platform
import sys
from importlib import metadata
from pathlib import Path

from grpo_repro import io

PACKAGES = (
    "torch",
    "transformers",
    "trl",
    "accelerate",
    "datasets",
    "tokenizers",
    "numpy",
    "scipy",
    "sympy",
    "pandas",
    "matplotlib",
    "snakemake",
    "grpo_repro",
    "vllm",
)


def versions() -> dict:
    out = {"python": sys.version.split()[0], "platform": platform.platform()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def file_hash(path: str | Path) -> str:
    """sha256 of a file, or of a directory's files (names and contents, sorted)."""
    h = hashlib.sha256()
    path = Path(path)
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for f in files:
        h.update(str(f.relative_to(path) if path.is_dir() else f.name).encode())
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()


def record(config: dict, inputs=()) -> dict:
    return {
        "config": config,
        "versions": versions(),
        "inputs": {str(p): file_hash(p) for p in inputs if Path(p).exists()},
    }


STAGE_DIRS = ("theory", "figures", "data", "train", "evaluate", "report")
HASH_LIMIT = 64 << 20  # files above this size are listed by size only (paper-scale checkpoints)


def stage_manifest(stage_dir: str | Path) -> dict:
    """sha256 (or size, for big files) of every file of one stage's output directory."""
    root = Path(stage_dir)
    out = {}
    for f in sorted(p for p in root.rglob("*") if p.is_file() and p.name != "PROVENANCE.json"):
        if "/work/" in f.as_posix() or ".tmp" in f.name:  # TRL's resumable state, temp files
            continue
        size = f.stat().st_size
        out[str(f.relative_to(root))] = file_hash(f) if size <= HASH_LIMIT else f"{size} bytes"
    return out


def write_stage_provenance(results: str | Path, config: dict) -> list[Path]:
    """results/<stage>/PROVENANCE.json for every stage present: the resolved configuration, the
    package versions and the hash of every file, so a difference between two runs can be traced."""
    written = []
    versions_now = versions()
    for stage in STAGE_DIRS:
        d = Path(results) / stage
        if d.is_dir():
            io.write_json(
                d / "PROVENANCE.json",
                {
                    "stage": stage,
                    "config": config,
                    "versions": versions_now,
                    "files": stage_manifest(d),
                },
            )
            written.append(d / "PROVENANCE.json")
    return written


def config_changes(recorded, current, keys: tuple = ()) -> list[str]:
    """'key: recorded -> current' for every dotted key whose value differs (mappings compared key
    by key, anything else as a whole)."""
    if isinstance(recorded, dict) and isinstance(current, dict):
        out = []
        for k in sorted(set(recorded) | set(current), key=str):
            a, b = recorded.get(k, "<absent>"), current.get(k, "<absent>")
            out += config_changes(a, b, (*keys, k))
        return out
    return [] if recorded == current else [f"{'.'.join(map(str, keys))}: {recorded} -> {current}"]


def untracked_changes(results: str | Path, config: dict, metadata: str | Path) -> str | None:
    """A results tree whose PROVENANCE.json records another configuration (in keys that change
    results: speed-only keys aside, grpo_repro.config.SPEED_ONLY) while Snakemake holds no record
    of its outputs (`metadata`: .snakemake/metadata, absent when the tree was copied from another
    checkout): Snakemake then judges the outputs by their times alone and would keep them, stale.
    Returns the message naming each stage and key, None when there is nothing to say."""
    import json

    from grpo_repro.config import without_speed_only

    meta = Path(metadata)
    if meta.is_dir() and any(meta.iterdir()):
        return None  # Snakemake's own records rerun what a changed setting touches
    now = json.loads(json.dumps(without_speed_only(config), default=str))
    found = []
    for stage in STAGE_DIRS:
        prov = Path(results) / stage / "PROVENANCE.json"
        if prov.is_file():
            was = without_speed_only(io.read_json(prov)["config"])
            changes = config_changes(was, now)
            if changes:
                found.append(f"  {prov.parent}: " + "; ".join(changes[:8]))
    if not found:
        return None
    return (
        f"{results}/ was written with another configuration, and Snakemake has no record of it "
        f"({metadata} is empty or absent: a results tree copied from elsewhere), so it cannot tell "
        "which outputs are stale:\n" + "\n".join(found) + "\nRun with the configuration that "
        "wrote them, remove those folders, or rerun everything with --forceall."
    )
