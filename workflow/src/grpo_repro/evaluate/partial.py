"""Resumable evaluation: finished chunks of prompts are appended to `<table>.partial.jsonl`, whose
first line is a fingerprint of the model weights, decoding settings, seeds and prompts; a killed job
restarts from the completed chunks of a partial file with the same fingerprint."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from grpo_repro import io


def partial_path_for(csv_path: str | Path) -> Path:
    p = Path(csv_path)
    return p.with_name(p.stem + ".partial.jsonl")


def read_partial(path: Path, fingerprint: str) -> dict[int, dict]:
    """Completed chunks {index: record} of a partial file with this fingerprint ({} otherwise)."""
    if not path.exists():
        return {}
    chunks = {}
    with open(path) as f:
        lines = f.read().split("\n")
    try:
        header = json.loads(lines[0])
    except (json.JSONDecodeError, IndexError):
        return {}
    if header.get("fingerprint") != fingerprint:
        print(f"[evaluate] {path}: different model/settings, starting over", file=sys.stderr)
        return {}
    for line in lines[1:]:
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:  # a line cut by a kill: that chunk is redone
            continue
        chunks[int(rec["chunk"])] = rec
    return chunks


def append_line(f, obj) -> None:
    f.write(json.dumps(obj, separators=(",", ":")) + "\n")
    f.flush()
    os.fsync(f.fileno())


def rewrite(path: str | Path, lines: list[dict]) -> None:
    """Replace the partial file by `lines` (atomically), so a line cut by a kill never precedes new ones."""
    io.write_text(path, "".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))
