"""The project's own writers' stores: Membox and ENGRAM exports (``memaudit.memories/1``).

An export is ``memories.jsonl`` (see :mod:`memaudit_fast.writers.export`): one record per line
with ``memory_id``, ``text``, ``source_turns``, ``time`` and ``kind``, plus writer-specific
keys kept as they are. Give the file or the store directory holding it. The record kinds
must be the writer's own (Membox: ``box``, ``event``; ENGRAM: ``episodic``, ``semantic``,
``procedural``), and a store directory's manifest (also the one beside a ``memories.jsonl``
given as a file) must name the same writer, so that an export is never scored under the wrong
system's name. The manifest's ``sample_id`` (the LoCoMo conversation the store was written
for) is kept in the export's details; :func:`~memaudit_fast.systems.union.build_union` refuses
a store whose conversation is not the package's. Every record is an ``active`` memory;
``time`` is the writer's anchor (an ISO date, or coarser: ``2023-04``, ``week of
2023-05-01``; anchors too vague to read order as unknown). An export without records is
refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import PackageError, UsageError
from ..model.jsonio import describe
from .records import ExportedMemory, SystemExport, parse_time, require_memories

#: Record kinds each writer exports.
WRITER_KINDS: dict[str, tuple[str, ...]] = {
    "membox": ("box", "event"),
    "engram": ("episodic", "semantic", "procedural"),
    "flat": ("turn",),
}
_CORE_KEYS = ("memory_id", "text", "source_turns", "time", "kind")


def export_path(export: str | Path, writer: str) -> Path:
    """The ``memories.jsonl`` of a store directory (checking its manifest), or the file itself."""
    return _locate(export, writer)[0]


def _locate(export: str | Path, writer: str) -> tuple[Path, dict[str, Any] | None, Path | None]:
    """The export file, the store manifest that describes it (checked) and its path.

    A directory's manifest describes its ``memories.jsonl``; a file named ``memories.jsonl``
    is described by a manifest beside it, as ``memaudit write`` leaves them.
    """
    from ..writers.store import EXPORT, MANIFEST

    path = Path(export)
    if path.is_dir():
        target = path / EXPORT
        manifest_path = path / MANIFEST
    else:
        target = path
        manifest_path = path.parent / MANIFEST
        if path.name != EXPORT:
            return path, None, None
    manifest = _read_manifest(manifest_path, writer) if manifest_path.is_file() else None
    if path.is_dir() and not target.is_file():
        raise PackageError(
            f"no {EXPORT} in this store directory; write it with "
            "memaudit_fast.writers.export_store(store, directory)",
            source=str(path),
        )
    return target, manifest, manifest_path if manifest is not None else None


def _read_manifest(path: Path, writer: str) -> dict[str, Any]:
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        manifest = None
    if not isinstance(manifest, dict):
        raise PackageError("not a valid store manifest", source=str(path))
    named = manifest.get("writer")
    if named is None:
        raise PackageError(f"missing; a writer store's manifest names its writer (here {writer!r})",
                           field="writer", source=str(path))
    if named != writer:
        how = (f"import it as {named}" if named in WRITER_KINDS and named != "flat" else
               "a flat store holds the dialogue's turns, not a writer's memories, and is not imported")
        raise PackageError(
            f"this store was written by {named!r}, not {writer!r}; {how}",
            field="writer", source=str(path),
        )
    sample_id = manifest.get("sample_id")
    if sample_id is not None and not (isinstance(sample_id, str) and sample_id.strip()):
        raise PackageError(
            f"found {describe(sample_id)}, expected a non-empty string (the LoCoMo conversation "
            "the store was written for) or null", field="sample_id", source=str(path),
        )
    return manifest


def read_own(export: str | Path, writer: str) -> SystemExport:
    """Read a Membox or ENGRAM export (file or store directory)."""
    from ..writers.export import read_export

    if writer not in WRITER_KINDS:
        raise UsageError(f"unknown writer {writer!r}; expected one of {', '.join(WRITER_KINDS)}")
    path, manifest, manifest_path = _locate(export, writer)
    if not path.is_file():
        raise PackageError(f"file not found; expected a {writer} memories.jsonl export", source=str(path))
    kinds = WRITER_KINDS[writer]
    memories: list[ExportedMemory] = []
    counts: dict[str, int] = {k: 0 for k in kinds}
    try:
        for position, record in enumerate(read_export(path)):
            kind = record["kind"]
            if kind not in kinds:
                raise PackageError(
                    f"found kind {kind!r}, expected one of {', '.join(kinds)} in a {writer} export",
                    record=f"record {position + 1} ({record['memory_id']})", field="kind",
                )
            counts[kind] += 1
            time = record["time"]
            extra: dict[str, Any] = {k: v for k, v in record.items() if k not in _CORE_KEYS}
            memories.append(ExportedMemory(
                record["memory_id"], record["text"], kind, "active", time,
                parse_time(time) if time else None, position, tuple(record["source_turns"]), extra,
            ))
    except UnicodeDecodeError as exc:
        raise PackageError(f"not UTF-8 text (byte {exc.start})", source=str(path)) from None
    except PackageError as exc:
        if exc.source:
            raise
        raise PackageError(exc.detail, record=exc.record, field=exc.field, source=str(path)) from None
    details: dict[str, Any] = {"writer": writer, "kinds": counts, "export": str(path)}
    if manifest is not None:
        details["manifest"] = str(manifest_path)
        if manifest.get("sample_id") is not None:
            details["sample_id"] = manifest["sample_id"]
    return require_memories(SystemExport(writer, str(path), memories, details), "no records")
