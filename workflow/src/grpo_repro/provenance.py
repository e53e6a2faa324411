"""Provenance: what made each artifact, so that any difference between two runs can be traced.

A job's own record (record: its configuration, package versions, input hashes) goes into the files
it writes (run.json, evaluation metadata); every job also records itself when it ends well, beside
its log (grpo_repro.io.log_to: its rule, params as Snakemake compares them, outputs); each stage
folder's PROVENANCE.json describes every file by the job that made it (write_stage_provenance, from
those records: no file of Snakemake's own is read), and a results tree copied from elsewhere is
checked against the rules' current params (stale_outputs)."""

from __future__ import annotations

import hashlib
import os
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


STAGE_DIRS = ("theory", "figures", "data", "train", "evaluate", "report", "fixed_point", "zero")
HASH_LIMIT = 64 << 20  # files above this size are listed by size only (paper-scale checkpoints)


def stage_files(stage_dir: str | Path) -> list[Path]:
    """The files of one stage's output directory that provenance describes (not TRL's resumable
    state, temporary files or the provenance itself)."""
    root = Path(stage_dir)
    skip = ("PROVENANCE.json", ".snakemake_timestamp")
    return [
        f
        for f in sorted(p for p in root.rglob("*") if p.is_file() and p.name not in skip)
        if "/work/" not in f.as_posix() and ".tmp" not in f.name
    ]


def content(f: Path) -> str:
    """sha256 of a file, or its size for a big one (HASH_LIMIT)."""
    size = f.stat().st_size
    return file_hash(f) if size <= HASH_LIMIT else f"{size} bytes"


def job_records(logs: str | Path) -> dict[str, dict]:
    """{output path: the record of the job that wrote it (rule, params, ended)} from the records
    the jobs wrote beside their logs under `logs` (grpo_repro.io.job_record_path); where two
    records name one output, the later one."""
    found: dict[str, dict] = {}
    for f in Path(logs).rglob(f"*{io.JOB_RECORD}"):
        try:
            rec = io.read_json(f)
        except (OSError, ValueError):
            continue  # a record cut by a kill: its job's outputs were remade or are described
        entry = {"rule": rec.get("rule"), "params": rec.get("params"), "ended": rec.get("ended")}
        for out in rec.get("outputs", []):
            key = os.path.normpath(out)
            if key not in found or (entry["ended"] or 0) > (found[key]["ended"] or 0):
                found[key] = entry
    return found


def made_by(records: dict, path: Path, stage_dir: Path) -> dict | None:
    """The record of the job that made `path` (`records`: job_records): its own, else that of the
    directory output holding it, else, for a file a job writes beside its declared outputs (a
    run's checkpoints beside its run.json), that of the nearest declared output in the same or an
    enclosing folder of the stage, named by `output`."""

    def job_record(p):
        return records.get(os.path.normpath(str(p)))

    rec = job_record(path)
    if rec:
        return rec
    for parent in path.parents:
        if not parent.is_relative_to(stage_dir):
            return None
        rec = job_record(parent)
        if rec:
            return {**rec, "output": str(parent)}
        for sibling in sorted(x for x in parent.iterdir() if x.is_file()):
            rec = job_record(sibling)
            if rec:
                return {**rec, "output": str(sibling)}
    return None


def write_stage_provenance(results: str | Path, logs: str | Path | None = None) -> list[Path]:
    """results/<stage>/PROVENANCE.json for every stage with a file that its record does not yet
    describe (new, or modified after the record was written: by a job of this run or of a run
    killed before it could write provenance) or a file gone: per file its hash, the rule and
    params of the job that made it (the job's own record under `logs`, default results/logs:
    job_records) and the package versions it was made with. A stage no job touched keeps its
    record byte for byte; a file no job rewrote keeps its entry."""
    written = []
    records = None  # read once, when a stage has a file to describe
    now = versions()
    now_id = hashlib.sha256(repr(sorted(now.items())).encode()).hexdigest()[:12]
    for stage in STAGE_DIRS:
        d = Path(results) / stage
        if not d.is_dir():
            continue
        prov = d / "PROVENANCE.json"
        old = io.read_json(prov) if prov.is_file() else {}
        old_files, kept_versions = old.get("files", {}), old.get("versions", {})
        stamp = prov.stat().st_mtime if prov.is_file() else float("-inf")
        files = {str(f.relative_to(d)): f for f in stage_files(d)}
        fresh = {r for r, f in files.items() if r not in old_files or f.stat().st_mtime > stamp}
        if not fresh and files.keys() == old_files.keys():
            continue  # every file as its record describes it: the record stays as it was
        entries = {}
        for rel, f in files.items():
            if rel not in fresh:
                entries[rel] = old_files[rel]
                continue
            if records is None:
                records = job_records(logs if logs is not None else Path(results) / "logs")
            job = made_by(records, Path(os.path.relpath(f)), Path(os.path.relpath(d))) or {}
            entries[rel] = {"content": content(f), **job, "versions": now_id}
        used = {e.get("versions") for e in entries.values()}
        kept = {k: v for k, v in kept_versions.items() if k in used}
        io.write_json(prov, {"stage": stage, "versions": {**kept, now_id: now}, "files": entries})
        written.append(prov)
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


def stale_outputs(results: str | Path, current, metadata: str | Path) -> str | None:
    """A results tree Snakemake has no record of (`metadata`, .snakemake/metadata, empty or absent:
    a tree copied from elsewhere) whose files' PROVENANCE.json records show they were made by jobs
    whose params differ from what this configuration gives their rules (`current(rule, path)`:
    the rule's params for that output, as Snakemake compares them; None when the rule is gone):
    Snakemake, judging by times alone, would keep them. Returns the message naming each stage
    folder whose files are stale, how many, and the settings that changed (read from the params
    themselves), None when there is nothing to say."""
    meta = Path(metadata)
    if meta.is_dir() and any(meta.iterdir()):
        return None  # Snakemake's own records rerun what a changed setting touches
    found = []
    for stage in STAGE_DIRS:
        prov = Path(results) / stage / "PROVENANCE.json"
        if not prov.is_file():
            continue
        stale, changes = 0, []
        for rel, entry in io.read_json(prov).get("files", {}).items():
            if not entry.get("rule") or entry.get("params") is None:
                continue
            now = current(entry["rule"], entry.get("output") or str(Path(results, stage, rel)))
            if now is None or sorted(now) != sorted(entry["params"]):
                stale += 1
                changes += params_changes(entry["params"], now)
        if stale:
            keys = "; ".join(dict.fromkeys(changes)) or "its rule is gone"
            found.append(f"  {prov.parent}: {stale} file(s) made with other settings: {keys}")
    if not found:
        return None
    return (
        f"{results}/ holds files made with other settings, and Snakemake has no record of them "
        f"({metadata} is empty or absent: a results tree copied from elsewhere), so it would keep "
        "them:\n" + "\n".join(found) + "\nRun with the configuration that made them, or remove "
        f"those folders (only they; all of {results}/ to rerun everything)."
    )


def params_changes(recorded: list[str], current: list[str] | None, limit: int = 6) -> list[str]:
    """'key: recorded -> current' of the settings that differ between two param lists (Snakemake's
    sorted reprs): mappings with the same keys compared key by key, anything else as a whole."""
    import ast

    if current is None:
        return ["the rule is gone"]

    def parse(x):
        try:
            return ast.literal_eval(x)
        except (ValueError, SyntaxError):
            return x

    old = [parse(x) for x in recorded if x not in current]
    new = [parse(x) for x in current if x not in recorded]
    out = []
    for a in old:
        b = next(
            (
                n
                for n in new
                if isinstance(a, dict) and isinstance(n, dict) and a.keys() == n.keys()
            ),
            None,
        )
        if b is not None:
            new.remove(b)
            out += config_changes(a, b)
        else:
            out.append(f"{str(a)[:60]} -> {str(new.pop(0))[:60] if new else '<absent>'}")
    return out[:limit]
