"""File I/O of every stage, one argument order (path first).

Writes are atomic: a temporary file in the target's folder, then os.replace, so a killed job never
leaves a truncated CSV/JSON/PNG behind (the target has its old content or the complete new one).
Reads validate their input and raise `DataError` naming the file and 1-based line.
`log_to` sends a Snakemake script's output to its rule's log file and, when the job ends well, writes
the job's record beside it (`JOB_RECORD`: its rule, params and outputs, which
grpo_repro.provenance reads).
"""

from __future__ import annotations

import atexit
import contextlib
import csv
import json
import logging
import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path


class DataError(ValueError):
    """Unusable input data; the message names the file and 1-based line."""


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike):
    """Yield a temporary path next to `path` (same suffix); on success it replaces `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        dir=path.parent, prefix=f".{path.stem}.", suffix=f".tmp{path.suffix}"
    )
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
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())


def write_json(path: str | os.PathLike, obj, sort_keys: bool = True) -> None:
    """JSON, indented, keys sorted (unless sort_keys=False), objects JSON cannot hold as str."""
    write_text(path, json.dumps(obj, indent=2, sort_keys=sort_keys, default=str) + "\n")


def write_jsonl(path: str | os.PathLike, records: Iterable[dict]) -> None:
    """One JSON object per line (non-ASCII kept as is)."""
    write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))


def write_csv(path: str | os.PathLike, df) -> None:
    """pandas DataFrame -> CSV without the index (floats with full precision: they round-trip)."""
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False)


def write_rows(path: str | os.PathLike, rows: list[dict], columns: list[str] | None = None) -> None:
    """Rows of dicts -> CSV (csv module; columns: the given order, else sorted keys of all rows)."""
    columns = columns or sorted({k for r in rows for k in r})
    with atomic_path(path) as tmp, open(tmp, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)


def read_json(path: str | os.PathLike):
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except json.JSONDecodeError as err:
        raise DataError(f"{path}:{err.lineno}: malformed JSON ({err.msg})") from None


def read_jsonl(
    path: str | os.PathLike,
    required: Iterable[str] = (),
    check: Callable[[dict, str], dict] | None = None,
    expected: str = "",
) -> list[dict]:
    """Records of a JSONL file; blank lines skipped. Every record must be a JSON object holding the
    `required` keys; `check(record, "file:line")` may validate further (raising DataError).
    `expected` describes the format in error messages. Raises DataError naming file and line."""
    path = Path(path)
    hint = f" (expected {expected})" if expected else ""
    if not path.is_file():
        raise DataError(f"{path}: file not found{hint}")
    records = []
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            where = f"{path}:{lineno}"
            try:
                line = raw.decode("utf-8").strip()
            except UnicodeDecodeError as err:
                raise DataError(f"{where}: not UTF-8 text ({err.reason})") from None
            if not line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(
                    f"{where}: malformed JSON ({err.msg}, column {err.colno})"
                ) from None
            if not isinstance(record, dict):
                raise DataError(f"{where}: expected a JSON object, got {type(record).__name__}")
            missing = [k for k in required if k not in record]
            if missing:
                raise DataError(f"{where}: missing field(s) {', '.join(missing)}")
            records.append(check(record, where) if check else record)
    if not records:
        raise DataError(f"{path}:1: file is empty{hint}")
    return records


def log_to(path: str | os.PathLike | None, job=None) -> None:
    """Send this process's stdout, stderr and logging (INFO) to the log file `path` (a rule's
    `log:`), line-buffered; nothing happens when `path` is None. The file is appended to, never
    truncated: a re-executed or resumed job keeps the log of its earlier attempts. `job`: the
    script's Snakemake object, whose record (`job_record`) is written beside the log when the
    process ends without an uncaught exception."""
    if not path:
        return
    if job is not None:
        atexit.register(_write_job_record, job, path)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    stream = open(path, "a", buffering=1, encoding="utf-8")
    sys.stdout = sys.stderr = stream
    logging.basicConfig(
        stream=stream,
        level=logging.INFO,
        force=True,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    atexit.register(_job_times, stream)


JOB_TIMES = "[job times]"  # the last line of every job's log (workflow/benchmarks/bench_graph.py)
JOB_RECORD = ".job.json"  # a job's record: its log's path with this suffix (job_record_path)


def job_record_path(log: str | os.PathLike) -> Path:
    """Where the job whose log is `log` records itself."""
    return Path(log).with_suffix(JOB_RECORD)


def compared_params(params) -> list[str]:
    """A job's params as Snakemake records and compares them (its rerun trigger): the sorted reprs
    of the builtin values."""
    builtin = (type(None), int, float, bool, str, list, tuple, dict, set)
    return sorted(repr(v) for v in params if isinstance(v, builtin))


def job_record(job) -> dict:
    """What a job knows of itself: its rule, its params as Snakemake compares them, its declared
    outputs."""
    return {
        "rule": job.rule,
        "params": compared_params(job.params),
        "outputs": [str(o) for o in job.output],
    }


def _write_job_record(job, log) -> None:
    import time

    if getattr(job, "rule", None) is None:  # not a Snakemake job (a test's stand-in): no record
        return
    if getattr(sys, "last_value", None) is None:  # no uncaught exception: the job ended well
        write_json(job_record_path(log), {**job_record(job), "ended": time.time()})


def job_times() -> dict:
    """Wall seconds since this process started, and CPU seconds (user + system) of this process
    and of its waited-for children: exact, where Snakemake's benchmark files sample CPU time
    every 30 s and miss what a job spends after its last sample."""
    import resource
    import time

    import psutil

    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return {
        "wall": time.time() - psutil.Process().create_time(),
        "cpu": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime,
    }


def _job_times(stream) -> None:
    with contextlib.suppress(Exception):  # the log may be closed at exit
        t = job_times()
        stream.write(f"{JOB_TIMES} wall {t['wall']:.2f} s, cpu {t['cpu']:.2f} s\n")
        stream.flush()
