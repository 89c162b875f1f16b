"""A-Mem stores: memory notes (``agentic_memory.memory_system.MemoryNote``).

Input: a JSON list of notes, a JSON object ``{note_id: note}`` (A-Mem's ``memories`` dict), or
JSONL, one note per line. A note has ``content`` and ``id``, and optionally ``keywords``,
``tags`` (lists of strings), ``links`` (ids of linked notes; a list, or a dict ``{id:
strength}`` in early releases), ``context``, ``category`` (strings), ``timestamp`` and
``last_accessed`` (``YYYYMMDDHHMM``), ``retrieval_count`` (an integer >= 0) and
``evolution_history`` (a list). Notes read back from A-Mem's Chroma collection carry lists as
JSON strings and numbers as digits; both encodings are accepted, anything else of the wrong
type is refused, naming the note and the field.

A link to a note the export does not hold is kept as exported: A-Mem's ``delete`` removes a
note but not the links other notes hold to it, so real stores have such links. Links do not
enter any note's text; each one is listed in the export's notices (on stderr in ``memaudit
import``) and under ``dangling_links`` in the details.

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
from ..model.jsonio import describe, is_number
from .records import (
    ExportedMemory,
    RecordReader,
    SystemExport,
    is_jsonl,
    is_stdin,
    iter_json_lines,
    load_json_file,
    parse_time,
    require_memories,
    source_name,
    stdin_read_once,
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


@stdin_read_once
def read_amem(export: str | Path, *, view: str = "full") -> SystemExport:
    """Read A-Mem notes under the ``full`` or ``content`` view."""
    if view not in VIEWS:
        raise UsageError(f"unknown A-Mem view {view!r}; expected one of {', '.join(VIEWS)}")
    path = Path(export)
    reader = RecordReader(source_name(path), "amem")
    records: list[tuple[str, Any, str | None]] = []  # (where, note, id from a dict key)
    if is_jsonl(path, "amem"):
        records = [(where, value, None) for where, value in iter_json_lines(path, "amem")]
    else:
        data = load_json_file(path, "amem")
        if isinstance(data, list):
            records = [(f"record [{i}]", rec, None) for i, rec in enumerate(data)]
        elif is_stdin(path) and isinstance(data, dict) and isinstance(data.get("content"), str):
            records = [("line 1", data, None)]  # one note piped in as JSONL
        elif isinstance(data, dict):
            records = [(f"note {key!r}", rec, key) for key, rec in data.items()]
        else:
            raise PackageError(f"found {describe(data)}, expected a list or an object of notes",
                               source=source_name(path))

    memories: list[ExportedMemory] = []
    seen: dict[str, str] = {}
    link_targets: list[tuple[str, str]] = []  # (note id, linked id)
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
        link_targets.extend((note_id, t) for t in links)
        context = reader.string(rec, "context", where, required=False)
        category = reader.string(rec, "category", where, required=False)
        time, time_key = _compact_time(reader, rec, "timestamp", where)
        _compact_time(reader, rec, "last_accessed", where)
        _count(reader, rec, "retrieval_count", where)
        _json_list(reader, rec, "evolution_history", where)
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
    details: dict[str, Any] = {"notes": len(memories), "view": view, "links": len(link_targets)}
    result = SystemExport("amem", source_name(path), memories, details)
    dangling = [(note, target) for note, target in link_targets if target not in seen]
    if dangling:
        # A-Mem's delete leaves the links other notes hold to the deleted note (and releases
        # before link validation kept any): tolerated, kept as exported, and said.
        details["dangling_links"] = sorted({t for _, t in dangling})
        result.notices.append(_dangling_notice(source_name(path), dangling))
    return require_memories(result, "no notes")


def _dangling_notice(source: str, dangling: list[tuple[str, str]], shown: int = 5) -> str:
    pairs = ", ".join(f"note {note!r} -> {target!r}" for note, target in dangling[:shown])
    more = f" and {len(dangling) - shown} more" if len(dangling) > shown else ""
    n = len(dangling)
    return (f"{source}: {n} link{'s' if n != 1 else ''} to notes this export does not hold, kept as "
            f"exported (A-Mem's delete leaves them behind; links do not enter any note's text): "
            f"{pairs}{more}")


def _count(reader: RecordReader, rec: dict[str, Any], key: str, where: str) -> int | None:
    """An integer >= 0, or its digits as text (how A-Mem's Chroma collection stores numbers)."""
    value = rec.get(key)
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    if isinstance(value, (str, bool)):
        reader.fail(f"found {describe(value)}, expected an integer >= 0 (or its digits as text)",
                    record=where, fld=key)
    return reader.integer(rec, key, where)


def _json_text(reader: RecordReader, raw: str, where: str, key: str, expected: str) -> Any:
    """The value a Chroma JSON-text field holds, read as strictly as the export itself: a lone
    surrogate escape, NaN or a repeated key is refused naming the note and the field."""
    from ..model.jsonio import find_defects

    try:
        value = json.loads(raw, parse_constant=lambda name: _NOT_JSON)
    except (json.JSONDecodeError, RecursionError):
        reader.fail(f"found {describe(raw)}, expected {expected}", record=where, fld=key)
    if _contains(value, _NOT_JSON):
        reader.fail(f"found {describe(raw)}, expected {expected} (NaN and Infinity are not JSON)",
                    record=where, fld=key)
    defects = find_defects(value, limit=1)
    if defects:
        path, problem = defects[0]
        inner = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
        reader.fail(f"{problem} (in the field's JSON text)", record=where, fld=f"{key}{inner}")
    return value


_NOT_JSON = object()


def _contains(value: Any, marker: object) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if item is marker:
            return True
        if isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return False


def _json_list(reader: RecordReader, rec: dict[str, Any], key: str, where: str) -> list[Any]:
    """A list, or its JSON text (Chroma metadata holds lists as JSON text)."""
    raw = rec.get(key)
    if raw is None:
        return []
    value = raw
    if isinstance(raw, str):
        value = _json_text(reader, raw, where, key, "a list (or its JSON text)")
    if not isinstance(value, list):
        reader.fail(f"found {describe(raw)}, expected a list (or its JSON text)", record=where, fld=key)
    return list(value)


def _string_list(reader: RecordReader, rec: dict[str, Any], key: str, where: str) -> list[str]:
    value = rec.get(key)
    if isinstance(value, str):
        # Chroma metadata holds lists as JSON text.
        value = _json_text(reader, value, where, key, "a list of strings (or its JSON text)")
        rec = {key: value}
    return reader.string_list(rec, key, where)


def _links(reader: RecordReader, rec: dict[str, Any], where: str) -> list[str]:
    value = rec.get("links")
    if isinstance(value, str):
        value = _json_text(reader, value, where, "links", "a list of note ids (or its JSON text)")
    if value is None:
        return []
    if isinstance(value, dict):  # early releases kept {note_id: strength}
        for target, strength in value.items():
            if not is_number(strength):
                reader.fail(f"found {describe(strength)} as the strength of the link to {target!r}, "
                            "expected a number", record=where, fld="links")
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
