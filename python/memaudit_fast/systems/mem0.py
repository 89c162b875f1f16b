"""Mem0 stores: ``Memory.get_all`` results and, optionally, the SQLite ``history`` table.

``get_all`` returns ``{"results": [item, ...]}`` (older releases: the list itself, and
``"relations"`` beside it when a graph store is on). Each item carries ``id`` and ``memory``
(the text), and optionally ``hash``, ``metadata``, ``created_at``, ``updated_at`` (ISO 8601),
``user_id``, ``agent_id``, ``run_id``, ``actor_id``, ``role`` and ``score``. Every item becomes
an ``active`` memory timed by ``updated_at`` (else ``created_at``).

Mem0 deletes from its vector store but logs every change in a ``history`` table (columns
``memory_id, old_memory, new_memory, event, created_at, updated_at, is_deleted``; releases
before 0.1.30 named them ``prev_value, new_value, timestamp``). Given that table (the SQLite
file, or a JSON/JSONL list of rows as ``Memory.history`` returns them), changes are kept as
memories of their own, so a package's invalidation units can be credited to the store:

- ``UPDATE`` -> a ``superseded`` memory ``"[date] Updated: OLD -> NEW"``;
- ``DELETE`` -> a ``deleted`` memory ``"[date] Deleted: OLD"``.

``ADD`` rows add nothing when ``get_all`` is given (the item is there). Without ``get_all``
(history alone), the active store is rebuilt from the history: the last ``ADD``/``UPDATE``
value of every memory whose last event is not ``DELETE``.

Mem0 logs an ``ADD`` row for every memory it creates. An ``UPDATE`` or ``DELETE`` row of a
memory that no ``ADD`` row of the history created (and that ``get_all`` does not list) comes
from an incomplete history or another store's: it is refused, naming the row and the id. So
is a change that comes, in time order, before the ``ADD`` of its memory (naming both rows):
replayed, it would leave the older text active; the rows are not reordered to hide it. So are
a second ``ADD`` of one id and any row of a memory after its ``DELETE`` (naming both rows). A
memory ``get_all`` lists that the history deleted (the two taken at different moments) is kept
as exported and said in the export's notices.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import PackageError
from ..model.jsonio import describe
from .records import (
    JSONL_NAMES,
    SQLITE_MAGIC,
    ExportedMemory,
    RecordReader,
    SystemExport,
    deletion_text,
    is_stdin,
    load_json_file,
    load_records,
    parse_time,
    require_memories,
    source_name,
    stdin_bytes,
    stdin_read_once,
    update_text,
)

EVENTS = ("ADD", "UPDATE", "DELETE")
#: Fields of a get_all item besides id and memory, kept with the memory.
ITEM_FIELDS = ("hash", "user_id", "agent_id", "run_id", "actor_id", "role")


@dataclass(frozen=True)
class HistoryRow:
    where: str
    memory_id: str
    old: str | None
    new: str | None
    event: str
    time: str | None
    time_key: float | None
    is_deleted: bool
    order: int
    time_field: str = "created_at"


@stdin_read_once
def read_mem0(export: str | Path | None, *, history: str | Path | None = None) -> SystemExport:
    """Read a Mem0 store: ``get_all`` output and/or its history table.

    Parameters
    ----------
    export:
        JSON file of ``get_all`` results; ``None`` to rebuild the store from ``history``.
        A ``.db``/``.sqlite`` file here is read as the history table.
    history:
        The history SQLite file (table ``history``) or a JSON/JSONL list of history rows.
    """
    if export is not None and history is None and _is_history(Path(export)):
        export, history = None, export  # the history alone, as SQLite, JSON or JSONL
    if export is None and history is None:
        raise PackageError("nothing to read: give the get_all JSON, the history table, or both")
    items = _read_items(Path(export)) if export is not None else None
    rows = _read_history(Path(history)) if history is not None else []
    _check_known(rows, items, source_name(history) if history is not None else "")
    _check_added_first(rows, source_name(history) if history is not None else "")
    _check_lifecycle(rows, source_name(history) if history is not None else "")

    memories: list[ExportedMemory] = []
    if items is not None:
        memories.extend(items)
    else:
        memories.extend(_rebuild_active(rows))
    active_ids = {m.memory_id for m in memories}
    changes = _history_memories(rows)
    clash = [m.memory_id for m in changes if m.memory_id in active_ids]
    if clash:
        raise PackageError(f"history change id {clash[0]!r} collides with a memory id",
                           source=source_name(history) if history is not None else None)
    memories.extend(changes)
    memories = [_with_position(m, i) for i, m in enumerate(memories)]

    sources = [source_name(p) for p in (export, history) if p is not None]
    deleted_still_listed = sorted(
        {r.memory_id for r in rows if r.event == "DELETE"} & {m.memory_id for m in (items or [])}
    )
    details: dict[str, Any] = {
        "get_all": source_name(export) if export is not None else None,
        "history": source_name(history) if history is not None else None,
        "history_rows": len(rows),
        "events": {e: sum(1 for r in rows if r.event == e) for e in EVENTS},
        "active_from": "get_all" if items is not None else "history",
        "rendering": {"update": "[date] Updated: OLD -> NEW", "delete": "[date] Deleted: OLD"},
    }
    result = SystemExport("mem0", " + ".join(sources), memories, details)
    if deleted_still_listed:
        # Possible when get_all and the history come from different moments; shown, not fixed.
        details["deleted_but_listed"] = deleted_still_listed
        n = len(deleted_still_listed)
        shown = ", ".join(repr(i) for i in deleted_still_listed[:5]) + (f" and {n - 5} more" if n > 5 else "")
        result.notices.append(
            f"{source_name(export or '')}: {n} memor{'ies' if n != 1 else 'y'} listed by get_all but deleted "
            f"in the history {source_name(history or '')}: {shown}; kept as exported, active and deleted both (were get_all and the "
            "history taken at different moments?)"
        )
    if items is None:
        what = "the history has no rows"
    elif history is None:
        what = "get_all lists none"
    else:
        what = "get_all lists none, and the history records no UPDATE or DELETE"
    return require_memories(result, what)


def _check_known(rows: list[HistoryRow], items: list[ExportedMemory] | None, source: str) -> None:
    """Every UPDATE/DELETE row changes a memory the history added (or get_all lists)."""
    known = {r.memory_id for r in rows if r.event == "ADD"}
    known.update(m.memory_id for m in items or [])
    reader = RecordReader(source, "mem0 history")
    for row in rows:
        if row.event != "ADD" and row.memory_id not in known:
            listed = "" if items is None else " and get_all does not list"
            reader.fail(
                f"found {row.event} of memory id {row.memory_id!r}, which no ADD row of this history "
                f"created{listed}; Mem0 logs an ADD row for every memory it creates, so this history is "
                "incomplete or another store's: give the whole history table of the store",
                record=row.where, fld="memory_id",
            )


def _check_added_first(rows: list[HistoryRow], source: str) -> None:
    """No UPDATE/DELETE row comes, in time order, before the ADD row that created its memory.

    Mem0 logs a memory's ADD before any change to it, so a change dated earlier contradicts the
    history itself; replaying it would make the older text the active memory and the update a
    superseded one. Which stamp is wrong is the user's to say, so the rows are not reordered.
    """
    first_add: dict[str, HistoryRow] = {}
    for row in rows:
        if row.event == "ADD":
            first_add.setdefault(row.memory_id, row)
    replayed: set[str] = set()
    reader = RecordReader(source, "mem0 history")
    for row in rows:  # in replay order: by time, then table order
        if row.event == "ADD":
            replayed.add(row.memory_id)
            continue
        add = first_add.get(row.memory_id)
        if add is None or row.memory_id in replayed:
            continue
        if row.time_key is not None and add.time_key is not None and row.time_key < add.time_key:
            when = f"is dated {row.time} ({row.time_field}), before"
        elif row.time_key is not None and row.time_key == add.time_key:
            when = f"has the same time {row.time} as, and is listed before,"
        else:
            when = "has no time (updated_at, created_at and timestamp empty) and so comes before"
        reader.fail(
            f"found {row.event} of memory id {row.memory_id!r} that {when} the ADD row that created it "
            f"({add.where}, {add.time_field} {add.time}); Mem0 adds a memory before changing it: fix the "
            f"time of one of these two rows ({row.where} or {add.where})",
            record=row.where, fld=row.time_field,
        )


def _check_lifecycle(rows: list[HistoryRow], source: str) -> None:
    """In replay order, a memory is added once and never changed after its DELETE.

    Mem0 gives every memory it creates a fresh id, and a deleted memory is gone: a second ADD,
    or an UPDATE or DELETE after the DELETE, would be replayed as a resurrected or twice
    deleted memory. Such a history is not Mem0's own; both rows are named.
    """
    added: dict[str, HistoryRow] = {}
    deleted: dict[str, HistoryRow] = {}
    reader = RecordReader(source, "mem0 history")
    for row in rows:
        gone = deleted.get(row.memory_id)
        if gone is not None:
            reader.fail(
                f"found {row.event} of memory id {row.memory_id!r} after its DELETE ({gone.where}); Mem0 "
                f"neither changes nor re-adds a deleted memory: remove one of these two rows ({row.where} or "
                f"{gone.where}) or fix its time",
                record=row.where, fld="event",
            )
        if row.event == "ADD":
            first = added.get(row.memory_id)
            if first is not None:
                reader.fail(
                    f"found a second ADD of memory id {row.memory_id!r} (first at {first.where}); Mem0 adds "
                    f"a memory once, under a fresh id: remove one of these two rows ({row.where} or "
                    f"{first.where})",
                    record=row.where, fld="event",
                )
            added[row.memory_id] = row
        elif row.event == "DELETE":
            deleted[row.memory_id] = row


def _with_position(m: ExportedMemory, position: int) -> ExportedMemory:
    return ExportedMemory(
        m.memory_id, m.text, m.kind, m.status, m.time, m.time_key, position, m.source_turns, m.extra
    )


def _is_history(path: Path) -> bool:
    """Whether a file given as the export is a history table: SQLite, or JSON / JSONL whose
    first record has ``event`` and ``memory_id`` (a get_all memory has neither)."""
    if is_stdin(path):
        if stdin_bytes().startswith(SQLITE_MAGIC):
            return True
    elif path.suffix in (".db", ".sqlite", ".sqlite3"):
        return True
    elif not path.is_file():
        return False
    try:
        records = load_records(path, "mem0") if is_stdin(path) or path.name.endswith(JSONL_NAMES) else None
        if records is None:
            data = load_json_file(path, "mem0")
            first = data[0] if isinstance(data, list) and data else None
        else:
            first = records[0][1] if records else None
    except PackageError:
        return False  # read again as get_all output, which says what is wrong
    return isinstance(first, dict) and "event" in first and "memory_id" in first


def _read_items(path: Path) -> list[ExportedMemory]:
    data = load_json_file(path, "mem0")
    if isinstance(data, dict):
        if "results" not in data:
            raise PackageError(
                "missing; expected get_all output {\"results\": [...]} (or a list of memories)",
                field="results", source=source_name(path),
            )
        items = data["results"]
        if not isinstance(items, list):
            raise PackageError(f"found {describe(items)}, expected a list of memories",
                               field="results", source=source_name(path))
    elif isinstance(data, list):
        items = data
    else:
        raise PackageError(f"found {describe(data)}, expected get_all output", source=source_name(path))
    reader = RecordReader(source_name(path), "mem0")
    seen: dict[str, str] = {}
    out = []
    for i, raw in enumerate(items):
        where = f"results[{i}]"
        rec = reader.obj(raw, where)
        memory_id = reader.ident(rec, "id", where)
        assert memory_id is not None
        reader.unique(seen, memory_id, where, "id")
        text = reader.string(rec, "memory", where)
        assert text is not None
        created = reader.time(rec, "created_at", where)
        updated = reader.time(rec, "updated_at", where)
        for key in ITEM_FIELDS:
            reader.string(rec, key, where, required=False)
        reader.number(rec, "score", where)
        metadata = reader.mapping(rec, "metadata", where)
        time, time_key = updated if updated[0] is not None else created
        extra = {k: rec[k] for k in ("hash", "user_id", "agent_id", "run_id", "created_at", "updated_at")
                 if rec.get(k) is not None}
        if metadata:
            extra["metadata"] = metadata
        out.append(ExportedMemory(memory_id, text, "memory", "active", time, time_key, i, (), extra))
    return out


def _read_history(path: Path) -> list[HistoryRow]:
    if is_stdin(path) and stdin_bytes().startswith(SQLITE_MAGIC):
        raw = _sqlite_stdin_rows()
    elif not is_stdin(path) and path.suffix in (".db", ".sqlite", ".sqlite3"):
        raw = _sqlite_rows(path)
    else:
        raw = load_records(path, "mem0 history")
    reader = RecordReader(source_name(path), "mem0 history")
    rows = []
    for order, (where, value) in enumerate(raw):
        rec = reader.obj(value, where)
        # The pre-0.1.30 schema names: prev_value/new_value/timestamp.
        old_key = "old_memory" if "old_memory" in rec else "prev_value"
        new_key = "new_memory" if "new_memory" in rec else "new_value"
        memory_id = reader.ident(rec, "memory_id", where)
        assert memory_id is not None
        event = reader.string(rec, "event", where) or ""
        if event not in EVENTS:
            reader.fail(f"found {describe(event)}, expected one of {', '.join(EVENTS)}", record=where, fld="event")
        old = reader.string(rec, old_key, where, required=False)
        new = reader.string(rec, new_key, where, required=False)
        if event in ("UPDATE", "DELETE") and old is None:
            reader.fail(f"missing; a {event} row needs the previous memory", record=where, fld=old_key)
        if event in ("ADD", "UPDATE") and new is None:
            reader.fail(f"missing; an {event} row needs the new memory", record=where, fld=new_key)
        keys = ("updated_at", "created_at", "timestamp")
        times = [(*reader.time(rec, key, where), key) for key in keys]
        time, time_key, time_field = next((t for t in times if t[0] is not None), (None, None, "created_at"))
        is_deleted = reader.boolean(rec, "is_deleted", where)
        for key in ("actor_id", "role"):
            reader.string(rec, key, where, required=False)
        if rec.get("is_deleted") is not None and (event == "DELETE") != is_deleted:
            reader.fail(
                f"found is_deleted={int(is_deleted)} on a {event} row; Mem0 sets it to 1 exactly on DELETE",
                record=where, fld="is_deleted",
            )
        rows.append(HistoryRow(where, memory_id, old, new, event, time, time_key, is_deleted, order, time_field))
    # Mem0 orders a memory's history by time; rows without one keep their table order.
    rows.sort(key=lambda r: (r.time_key if r.time_key is not None else float("-inf"), r.order))
    return rows


def _sqlite_rows(path: Path) -> list[tuple[str, dict[str, Any]]]:
    if not path.is_file():
        raise PackageError("file not found; expected Mem0's history SQLite database", source=str(path))
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise PackageError(f"cannot open as SQLite: {exc}", source=str(path)) from None
    return _history_table(con, str(path))


def _sqlite_stdin_rows() -> list[tuple[str, dict[str, Any]]]:
    """The history table of a SQLite file piped in (``cat history.db | memaudit import mem0 -``)."""
    con = sqlite3.connect(":memory:")
    deserialize = getattr(con, "deserialize", None)  # Python 3.11+
    if deserialize is None:
        con.close()
        raise PackageError("a SQLite history cannot be read from stdin before Python 3.11; give the "
                           "file's path (--history PATH)", source=source_name("-"))
    try:
        deserialize(stdin_bytes())
    except sqlite3.Error as exc:
        con.close()
        raise PackageError(f"cannot open as SQLite: {exc}", source=source_name("-")) from None
    return _history_table(con, source_name("-"))


def _history_table(con: sqlite3.Connection, source: str) -> list[tuple[str, dict[str, Any]]]:
    try:
        try:
            cur = con.execute("SELECT rowid AS _rowid, * FROM history ORDER BY rowid")
            names = [d[0] for d in cur.description]
            rows = [(f"history row {r[0]}", dict(zip(names[1:], r[1:]))) for r in cur.fetchall()]
        except sqlite3.Error as exc:
            raise PackageError(
                f"no readable 'history' table ({exc}); expected the file Mem0 writes at "
                "history_db_path", source=source,
            ) from None
    finally:
        con.close()
    return rows


def _rebuild_active(rows: list[HistoryRow]) -> list[ExportedMemory]:
    state: dict[str, HistoryRow] = {}
    for row in rows:
        if row.event == "DELETE":
            state.pop(row.memory_id, None)
        else:
            state[row.memory_id] = row
    return [
        ExportedMemory(r.memory_id, r.new or "", "memory", "active", r.time, r.time_key, 0, (),
                       {"rebuilt_from": r.where})
        for r in sorted(state.values(), key=lambda r: r.order)
    ]


def _history_memories(rows: list[HistoryRow]) -> list[ExportedMemory]:
    out = []
    seen: dict[tuple[str, str], int] = {}
    for row in rows:
        if row.event == "ADD":
            continue
        k = seen[row.memory_id, row.event] = seen.get((row.memory_id, row.event), 0) + 1
        suffix = "" if k == 1 else str(k)
        if row.event == "UPDATE":
            text = update_text(row.old or "", row.new or "", row.time)
            out.append(ExportedMemory(
                f"{row.memory_id}@update{k}", text, "update", "superseded", row.time, row.time_key,
                0, (), {"of_memory": row.memory_id, "history_row": row.where},
            ))
        elif row.event == "DELETE":
            out.append(ExportedMemory(
                f"{row.memory_id}@delete{suffix}", deletion_text(row.old or "", row.time), "deletion",
                "deleted", row.time, row.time_key, 0, (),
                {"of_memory": row.memory_id, "history_row": row.where},
            ))
    return out


__all__ = ["parse_time", "read_mem0"]
