"""Atomic file output (every stage): write to a temporary file in the target's folder, then os.replace.

A killed job never leaves a truncated CSV/PNG/PDF behind: the target either has its old content
or the complete new one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path next to `path` (same suffix); on success it replaces `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=f".tmp{path.suffix}")
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write `text` (UTF-8) atomically, synced to disk before the rename."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())


def write_csv(df, path: str | os.PathLike) -> None:
    """pandas DataFrame -> CSV (floats written with full precision: they round-trip exactly)."""
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False)
