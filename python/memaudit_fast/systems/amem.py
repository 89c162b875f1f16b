"""A-Mem stores: memory notes (``agentic_memory.memory_system.MemoryNote``).

Input: a JSON list of notes, a JSON object ``{note_id: note}`` (A-Mem's ``memories`` dict), or
JSONL, one note per line. A note has ``content`` and ``id``, and optionally ``keywords``,
``tags`` (lists of strings), ``links`` (ids of linked notes; a list, or a dict in early
releases), ``context``, ``category``, ``timestamp`` and ``last_accessed`` (``YYYYMMDDHHMM``),
``retrieval_count`` and ``evolution_history``. Notes read back from A-Mem's Chroma collection
carry lists as JSON strings and numbers as digits; both encodings are accepted.

Two views of a note (the text a budget pays for):

``full`` (default)
    What A-Mem shows its LLM of a note: ``CONTENT Context: CONTEXT. Keywords: K1, K2. Tags:
    T1, T2.`` (empty parts left out).
``content``
    The content alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import PackageError, UsageError
from ..model.jsonio import describe
from .records import (
    ExportedMemory,
    RecordReader,
    SystemExport,
    iter_json_lines,
    load_json_file,
    parse_time,
)

VIEWS = ("full", "content")


def render_note(content: str, context: str | None, keywords: list[str], tags: list[str], view: str) -> str:
    """The text of a note under ``view`` (see the module docstring)."""
    if view == "content":
        return content
    parts = [content.strip()]
    if context and context.strip():
        parts.append(f"Context: {context.strip().rstrip('.')}.")
    if keywords:
        parts.append(f"Keywords: {', '.join(keywords)}.")
    if tags:
        parts.append(f"Tags: {', '.join(tags)}.")
    return " ".join(p for p in parts if p)


def read_amem(export: str | Path, *, view: str = "full") -> SystemExport:
    """Read A-Mem notes under the ``full`` or ``content`` view."""
    if view not in VIEWS:
        raise UsageError(f"unknown A-Mem view {view!r}; expected one of {', '.join(VIEWS)}")
    path = Path(export)
    reader = RecordReader(str(path), "amem")
    records: list[tuple[str, Any, str | None]] = []  # (where, note, id from a dict key)
    if path.name.endswith(".jsonl"):
        records = [(where, value, None) for where, value in iter_json_lines(path, "amem")]
    else:
        data = load_json_file(path, "amem")
        if isinstance(data, list):
            records = [(f"record [{i}]", rec, None) for i, rec in enumerate(data)]
        elif isinstance(data, dict):
            records = [(f"note {key!r}", rec, key) for key, rec in data.items()]
        else:
            raise PackageError(f"found {describe(data)}, expected a list or an object of notes", source=str(path))

    memories: list[ExportedMemory] = []
    seen: dict[str, str] = {}
    link_targets: list[str] = []
    for where, raw, key in records:
        rec = reader.obj(raw, where)
        content = reader.string(rec, "content", where)
        assert content is not None
        note_id = reader.ident(rec, "id", where, required=key is None)
        if key is not None and note_id is not None and note_id != key:
            reader.fail(f"found id {note_id!r} under the key {key!r}; they must match", record=where, fld="id")
        note_id = note_id or key
        assert note_id is not None
        reader.unique(seen, note_id, where, "id")
        keywords = _string_list(reader, rec, "keywords", where)
        tags = _string_list(reader, rec, "tags", where)
        links = _links(reader, rec, where)
        link_targets.extend(links)
        context = reader.string(rec, "context", where, required=False)
        category = reader.string(rec, "category", where, required=False)
        time, time_key = _compact_time(reader, rec, "timestamp", where)
        _compact_time(reader, rec, "last_accessed", where)
        text = render_note(content, context, keywords, tags, view)
        extra: dict[str, Any] = {"view": view}
        if keywords:
            extra["keywords"] = keywords
        if tags:
            extra["tags"] = tags
        if links:
            extra["links"] = links
        if category:
            extra["category"] = category
        memories.append(ExportedMemory(note_id, text, "note", "active", time, time_key, len(memories), (), extra))
    dangling = sorted({t for t in link_targets if t not in seen})
    details: dict[str, Any] = {"notes": len(memories), "view": view, "links": len(link_targets)}
    if dangling:
        # A-Mem drops links to unknown notes when it writes them; older stores may still hold some.
        details["dangling_links"] = dangling
    return SystemExport("amem", str(path), memories, details)


def _string_list(reader: RecordReader, rec: dict[str, Any], key: str, where: str) -> list[str]:
    value = rec.get(key)
    if isinstance(value, str):
        # Chroma metadata holds lists as JSON text.
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            reader.fail(f"found {describe(value)}, expected a list of strings (or its JSON text)",
                        record=where, fld=key)
        rec = {key: value}
    return reader.string_list(rec, key, where)


def _links(reader: RecordReader, rec: dict[str, Any], where: str) -> list[str]:
    value = rec.get("links")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            reader.fail(f"found {describe(value)}, expected a list of note ids", record=where, fld="links")
    if value is None:
        return []
    if isinstance(value, dict):  # early releases kept {note_id: strength}
        value = list(value)
    if not isinstance(value, list) or not all(
        (isinstance(v, str) and v) or (isinstance(v, int) and not isinstance(v, bool)) for v in value
    ):
        reader.fail(f"found {describe(value)}, expected a list of note ids", record=where, fld="links")
    return [str(v) for v in value]


def _compact_time(reader: RecordReader, rec: dict[str, Any], key: str, where: str) -> tuple[str | None, float | None]:
    raw = rec.get(key)
    if raw is None:
        return None, None
    # Chroma turns digit strings back into numbers.
    value = str(raw) if isinstance(raw, int) and not isinstance(raw, bool) else raw
    stamp = parse_time(value, compact=True) if isinstance(value, str) else None
    if stamp is None:
        reader.fail(f"found {describe(raw)}, expected a time YYYYMMDDHHMM", record=where, fld=key)
    return str(value), stamp
