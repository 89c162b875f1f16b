"""Export a writer's store as memory records, one JSON object per line (``memories.jsonl``).

The export lets MEMAUDIT score Membox and ENGRAM like any external memory system: each record
becomes a candidate of its own group, its cost computed from ``text`` by the package's cost
model, its coverage judged by an arbiter against the evidence units.

Format (``memaudit.memories/1``), one object per line; the first five keys are always there:

``memory_id`` (str)
    Unique within the export: ``box-<n>``, ``event-<n>`` (Membox), ``episodic-<n>``,
    ``semantic-<n>``, ``procedural-<n>`` (ENGRAM), ``turn-<dia_id>`` (flat baseline).
``text`` (str)
    The memory exactly as it would be placed in a prompt (what a budget pays for).
``source_turns`` (list of str)
    Dia ids of the conversation turns the memory was written from (may be empty).
``time`` (str or null)
    Time anchor: ISO date or date-time, or a coarser anchor (``2023-04``, ``week of
    2023-05-01``); ``null`` when unknown.
``kind`` (str)
    ``box``, ``event``, ``episodic``, ``semantic``, ``procedural`` or ``turn``.

Writers add their own keys (``topic``, ``keywords``, ``trace_ids``, ``speaker``, ...); readers
must ignore keys they do not know. Example line::

    {"memory_id": "episodic-12", "text": "[2023-05-07] group, support: Caroline: I went ...",
     "source_turns": ["D1:3"], "time": "2023-05-07", "kind": "episodic", "speaker": "Caroline"}
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..errors import PackageError
from ..model.jsonio import loads_strict
from ..model.limits import current_limits
from ..model.lines import iter_lines
from .store import EXPORT, MemoryStore

EXPORT_FORMAT = "memaudit.memories/1"
REQUIRED_KEYS = ("memory_id", "text", "source_turns", "time", "kind")


def check_record(record: Any, where: str) -> dict[str, Any]:
    """Validate one export record; raise ``PackageError`` naming the line and field."""
    if not isinstance(record, dict):
        raise PackageError("expected a JSON object", record=where)
    for key in REQUIRED_KEYS:
        if key not in record:
            raise PackageError("missing", record=where, field=key)
    if not isinstance(record["memory_id"], str) or not record["memory_id"]:
        raise PackageError("expected a non-empty string", record=where, field="memory_id")
    if not isinstance(record["text"], str):
        raise PackageError("expected a string", record=where, field="text")
    if not isinstance(record["kind"], str):
        raise PackageError("expected a string", record=where, field="kind")
    turns = record["source_turns"]
    if not isinstance(turns, list) or not all(isinstance(t, str) for t in turns):
        raise PackageError("expected a list of strings", record=where, field="source_turns")
    if record["time"] is not None and not isinstance(record["time"], str):
        raise PackageError("expected a string or null", record=where, field="time")
    return record


def write_export(records: Iterable[dict[str, Any]], path: str | Path) -> int:
    """Write records as JSONL (checked, ids unique); return how many were written.

    The file is written atomically: a bad record or a full disk leaves no partial export, and
    a symbolic link at ``path`` is replaced, never written through.
    """
    from ..model.jsonio import write_atomic

    path = Path(path)
    seen: set[str] = set()
    count = 0

    def write(out: Any) -> None:
        nonlocal count
        for n, record in enumerate(records, start=1):
            check_record(record, f"record {n}")
            if record["memory_id"] in seen:
                raise PackageError(
                    f"duplicate memory_id {record['memory_id']!r}", record=f"record {n}",
                    field="memory_id",
                )
            seen.add(record["memory_id"])
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            count = n

    write_atomic(path, write)
    return count


def export_store(store: MemoryStore, directory_or_file: str | Path) -> Path:
    """Write a store's export; a directory gets ``memories.jsonl`` inside it."""
    target = Path(directory_or_file)
    if target.is_dir() and not target.is_symlink():
        target = target / EXPORT
    write_export(store.export_records(), target)
    return target


def read_export(path: str | Path) -> Iterator[dict[str, Any]]:
    """Read and validate an export file line by line (the strict reader: regular files only,
    caps per line and per file, bad bytes and values reported with their line)."""
    path = Path(path)
    seen: set[str] = set()
    limits = current_limits()
    for lineno, line in iter_lines(path, line_cap=limits.max_file_bytes, stream_cap=limits.max_set_bytes):
        if isinstance(line, PackageError):
            raise line
        if not line.strip():
            continue
        where = f"line {lineno}"
        record = loads_strict(line, source=str(path), record=where)  # UTF-8, NaN, repeated keys, surrogates
        check_record(record, where)
        if record["memory_id"] in seen:
            raise PackageError(
                f"duplicate memory_id {record['memory_id']!r}", record=where,
                field="memory_id", source=str(path),
            )
        seen.add(record["memory_id"])
        yield record
