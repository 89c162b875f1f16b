"""What every importer produces: a system's exported memories, validated and time-ordered.

An importer reads a store exactly as its system exports it and returns a
:class:`SystemExport`: one :class:`ExportedMemory` per memory the store holds, in export
order, with the text a budget pays for, a status (``active``, or ``deleted`` / ``superseded``
for what the system's history kept) and the system's own time stamp. Nothing is dropped or
repaired silently: a malformed record raises a :class:`~memaudit_fast.errors.PackageError`
naming the file, the record (index or line), the field, what was found and what was expected.
An export holding no memories at all is refused the same way (:func:`require_memories`): an
empty store has nothing to score. What an importer tolerates by design (an A-Mem link to a
note that is gone, a Mem0 memory listed by ``get_all`` but deleted in its history) is kept as
exported and said in :attr:`SystemExport.notices`, which ``memaudit import`` prints on stderr.
"""

from __future__ import annotations

import functools
import gzip
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from ..errors import PackageError
from ..model.jsonio import describe, is_number

#: Statuses an exported memory can have.
STATUSES = ("active", "deleted", "superseded")


@dataclass(frozen=True)
class ExportedMemory:
    """One memory of an exported store.

    Attributes
    ----------
    memory_id:
        The system's id, unique within the export.
    text:
        What the store holds (and what a budget pays for), rendered as documented by the
        importer that produced it.
    kind:
        The system's kind of record (``memory``, ``update``, ``deletion``, ``core_atom``,
        ``passage``, ``note``, ``box``, ``episodic`` ...).
    status:
        ``active`` (readable by the agent now), ``deleted`` or ``superseded`` (kept in the
        system's history; rendered so that the invalidation is explicit).
    time:
        The system's time stamp as exported (``None`` when it has none).
    time_key:
        ``time`` as seconds since the epoch (UTC), for ordering; ``None`` when absent or
        too coarse to read.
    position:
        Index in the export, the tie-break of every ordering.
    source_turns:
        Dialogue turns the memory was written from, when the system records them.
    extra:
        System-specific fields kept for the union package (labels, tags, keywords, ...).
    """

    memory_id: str
    text: str
    kind: str
    status: str = "active"
    time: str | None = None
    time_key: float | None = None
    position: int = 0
    source_turns: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class SystemExport:
    """A whole exported store.

    Attributes
    ----------
    system:
        The importer that read it: ``mem0``, ``letta``, ``amem``, ``membox`` or ``engram``.
    source:
        The file(s) read, for messages and provenance.
    memories:
        Every memory, in export order.
    details:
        Counts and choices of the importer (view, split rule, history rows...), recorded in
        the union package.
    notices:
        What the importer tolerated and kept as exported, one sentence each, naming the file
        and the records (shown on stderr by ``memaudit import``; not errors).
    """

    system: str
    source: str
    memories: list[ExportedMemory]
    details: dict[str, Any] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)

    def by_status(self) -> dict[str, int]:
        counts = {s: 0 for s in STATUSES}
        for m in self.memories:
            counts[m.status] += 1
        return {s: n for s, n in counts.items() if n}


class RecordReader:
    """Field checks for one export file; every failure names file, record and field."""

    def __init__(self, source: str, system: str) -> None:
        self.source = source
        self.system = system

    def fail(self, message: str, *, record: str | None = None, fld: str | None = None) -> None:
        raise PackageError(f"{message} ({self.system} export)", record=record, field=fld, source=self.source)

    def obj(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(f"found {describe(value)}, expected a JSON object", record=where)
        return value  # type: ignore[return-value]

    def string(self, rec: dict[str, Any], key: str, where: str, *, required: bool = True,
               nonempty: bool = False) -> str | None:
        if key not in rec or rec[key] is None:
            if required:
                self.fail("missing; expected a string", record=where, fld=key)
            return None
        value = rec[key]
        if not isinstance(value, str) or (nonempty and not value.strip()):
            self.fail(
                f"found {describe(value)}, expected a {'non-empty ' if nonempty else ''}string",
                record=where, fld=key,
            )
        return value  # type: ignore[no-any-return]

    def ident(self, rec: dict[str, Any], key: str, where: str, *, required: bool = True) -> str | None:
        """An id: a non-empty string, or an integer (some stores number their records)."""
        if key not in rec or rec[key] is None:
            if required:
                self.fail("missing; expected a non-empty string id", record=where, fld=key)
            return None
        value = rec[key]
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        if not isinstance(value, str) or not value.strip():
            self.fail(f"found {describe(value)}, expected a non-empty string id (or an integer, which "
                      "some stores number their records with)", record=where, fld=key)
        return value  # type: ignore[no-any-return]

    def string_list(self, rec: dict[str, Any], key: str, where: str) -> list[str]:
        value = rec.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.fail(f"found {describe(value)}, expected a list of strings", record=where, fld=key)
        return list(value)

    def boolean(self, rec: dict[str, Any], key: str, where: str, default: bool = False) -> bool:
        value = rec.get(key, default)
        if value is None:
            return default
        # SQLite stores booleans as 0/1 integers; accept those, nothing else.
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        self.fail(f"found {describe(value)}, expected true/false (or 0/1)", record=where, fld=key)
        return default

    def number(self, rec: dict[str, Any], key: str, where: str) -> float | None:
        """An optional number (``null`` or absent: ``None``)."""
        value = rec.get(key)
        if value is None:
            return None
        if not is_number(value):
            self.fail(f"found {describe(value)}, expected a number or null", record=where, fld=key)
        return float(value)

    def mapping(self, rec: dict[str, Any], key: str, where: str) -> dict[str, Any] | None:
        """An optional JSON object (``null`` or absent: ``None``)."""
        value = rec.get(key)
        if value is not None and not isinstance(value, dict):
            self.fail(f"found {describe(value)}, expected an object or null", record=where, fld=key)
        return value  # type: ignore[no-any-return]

    def integer(self, rec: dict[str, Any], key: str, where: str) -> int | None:
        value = rec.get(key)
        if value is None:
            return None
        if not is_number(value) or float(value) != int(value) or value < 0:
            self.fail(f"found {describe(value)}, expected an integer >= 0", record=where, fld=key)
        return int(value)

    def time(self, rec: dict[str, Any], key: str, where: str, *, compact: bool = False) -> tuple[str | None, float | None]:
        """A time stamp as exported and its epoch seconds; a string that is no time is an error."""
        text = self.string(rec, key, where, required=False)
        if text is None or not text.strip():
            return None, None
        key_value = parse_time(text, compact=compact)
        if key_value is None:
            expected = "a time YYYYMMDDHHMM" if compact else "an ISO 8601 date or date-time"
            self.fail(f"found {describe(text)}, expected {expected}", record=where, fld=key)
        return text, key_value

    def unique(self, seen: dict[str, str], memory_id: str, where: str, fld: str) -> None:
        if memory_id in seen:
            self.fail(f"duplicate id {memory_id!r} (first at {seen[memory_id]}); ids must be unique",
                      record=where, fld=fld)
        seen[memory_id] = where


def require_memories(export: SystemExport, what: str) -> SystemExport:
    """``export`` itself, or a :class:`PackageError` when it holds no memories at all.

    ``what`` says what the importer found instead (``"no notes"``, ``"2 blocks, no atoms"``).
    An empty store would enter a union as a system of nothing, whose ratios are 0 or 0/0.
    """
    if not export.memories:
        raise PackageError(
            f"the export holds no memories ({what}); there is nothing to import or score. Check "
            f"that this is the {export.system} export you meant, written after the system stored "
            "its memories",
            source=export.source,
        )
    return export


_COMPACT = re.compile(r"^\d{12}$")
_MONTH = re.compile(r"^(\d{4})-(\d{2})$")
_WEEK_OF = re.compile(r"^week of (\d{4}-\d{2}-\d{2})$", re.IGNORECASE)


def parse_time(text: str, *, compact: bool = False) -> float | None:
    """Seconds since the epoch for an exported time stamp, or ``None`` when unreadable.

    Reads ISO 8601 dates and date-times (``Z`` or an offset; naive times are taken as UTC),
    A-Mem's ``YYYYMMDDHHMM``, and the writers' coarse anchors ``YYYY-MM`` and
    ``week of YYYY-MM-DD`` (taken at their first day).
    """
    s = text.strip()
    if _COMPACT.match(s):
        try:
            stamp = datetime.strptime(s, "%Y%m%d%H%M")
        except ValueError:
            return None
        return stamp.replace(tzinfo=timezone.utc).timestamp()
    if compact:
        return None
    week = _WEEK_OF.match(s)
    if week:
        s = week.group(1)
    month = _MONTH.match(s)
    if month:
        s = f"{month.group(1)}-{month.group(2)}-01"
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    try:
        stamp = datetime.fromisoformat(s)
    except ValueError:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=timezone.utc)
    return stamp.timestamp()


#: File names read as JSONL (the gzip one decompressed, as standard input is).
JSONL_NAMES = (".jsonl", ".jsonl.gz")
#: What JSON counts as white space (``str.strip`` alone would take U+2028 for it too).
JSON_SPACE = " \t\r\n"
#: The name that means standard input wherever an importer takes one file.
STDIN = "-"
#: How standard input is named in messages.
STDIN_NAME = "<stdin>"
SQLITE_MAGIC = b"SQLite format 3\x00"

# Standard input can be read once, but an importer may look at its export twice (Mem0 first
# tells a history from get_all output): within ``stdin_read_once`` the bytes are kept.
_held: list[bytes] = []
_depth = [0]

P = ParamSpec("P")
R = TypeVar("R")


def is_stdin(path: str | Path | None) -> bool:
    return path is not None and str(path) == STDIN


def source_name(path: str | Path) -> str:
    """``path`` as messages name it (``<stdin>`` for ``-``)."""
    return STDIN_NAME if is_stdin(path) else str(path)


def stdin_read_once(func: Callable[P, R]) -> Callable[P, R]:
    """Decorate an importer: ``-`` is standard input, read at most once per call."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        _depth[0] += 1
        try:
            return func(*args, **kwargs)
        finally:
            _depth[0] -= 1
            if not _depth[0]:
                _held.clear()

    return wrapper


def stdin_bytes() -> bytes:
    """All of standard input (gzip decompressed), within ``MEMAUDIT_MAX_FILE_BYTES``."""
    if _held:
        return _held[0]
    from ..model.limits import current_limits
    from ..model.lines import stdin_stream, stdin_too_large

    cap = current_limits().max_file_bytes
    try:
        raw = stdin_stream().read(cap + 1)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise PackageError(f"cannot read: {exc}", source=STDIN_NAME) from None
    if len(raw) > cap:
        raise stdin_too_large(cap)
    if _depth[0]:
        _held.append(raw)
    return raw


def stdin_text(system: str) -> str:
    from ..model.jsonio import decode_utf8

    raw = stdin_bytes()
    if not raw.strip():
        raise PackageError(f"no input on stdin; expected a {system} export", source=STDIN_NAME)
    if raw.startswith(SQLITE_MAGIC):
        raise PackageError(f"a SQLite database; expected a {system} export as JSON or JSONL", source=STDIN_NAME)
    return decode_utf8(raw, source=STDIN_NAME)


def stdin_jsonl_lines(text: str) -> list[str] | None:
    """The lines of ``text`` when it reads as JSONL (several lines, the first a whole JSON
    value), else ``None`` (one JSON document, perhaps pretty-printed)."""
    from ..model.jsonio import loads_strict

    lines = [line for line in jsonl_lines(text) if line.strip(JSON_SPACE)]
    if len(lines) < 2:
        return None
    try:
        loads_strict(lines[0], source=STDIN_NAME)
    except PackageError:
        return None  # the first line of a pretty-printed document
    return jsonl_lines(text)


def jsonl_lines(text: str) -> list[str]:
    """The lines of JSONL text, split at ``\n`` only: U+2028, U+0085 and the other breaks
    ``str.splitlines`` knows may stand raw inside a JSON string (a ``\r`` before the ``\n``
    is JSON whitespace)."""
    return text.split("\n")


def load_json_file(path: Path, system: str) -> Any:
    """Read a JSON file (or ``-``, stdin) strictly (repeated keys and NaN are errors) with precise messages."""
    from ..model.jsonio import loads_strict, read_text

    if is_stdin(path):
        return loads_strict(stdin_text(system), source=STDIN_NAME)
    if not path.is_file():
        raise PackageError(f"file not found; expected a {system} export", source=str(path))
    return loads_strict(read_text(path), source=str(path))


def iter_json_lines(path: Path, system: str) -> Iterator[tuple[str, Any]]:
    """``(where, value)`` for each non-blank line of a JSONL file (or ``-``), parsed strictly."""
    from ..model.jsonio import loads_strict, read_text

    if is_stdin(path):
        lines = jsonl_lines(stdin_text(system))
    elif not path.is_file():
        raise PackageError(f"file not found; expected a {system} export", source=str(path))
    else:
        lines = jsonl_lines(read_text(path))  # gzip when named .gz, as stdin is read
    for number, line in enumerate(lines, start=1):
        if line.strip(JSON_SPACE):
            where = f"line {number}"
            yield where, loads_strict(line, source=source_name(path), record=where)


def is_jsonl(path: Path, system: str) -> bool:
    """Whether records are read by line: a ``.jsonl`` (or ``.jsonl.gz``) name, or stdin holding JSONL."""
    if is_stdin(path):
        return stdin_jsonl_lines(stdin_text(system)) is not None
    return path.name.endswith(JSONL_NAMES)


def load_records(path: Path, system: str) -> list[tuple[str, Any]]:
    """Records of a ``.jsonl`` file (located by line) or of a JSON list (located by index)."""
    if is_jsonl(path, system):
        return list(iter_json_lines(path, system))
    data = load_json_file(path, system)
    if is_stdin(path) and isinstance(data, dict):
        return [("line 1", data)]  # one JSONL record piped in
    if not isinstance(data, list):
        raise PackageError(f"found {describe(data)}, expected a JSON list of records", source=source_name(path))
    return [(f"record [{i}]", rec) for i, rec in enumerate(data)]


def deletion_text(text: str, when: str | None) -> str:
    """How a deleted memory is kept: the old content marked as no longer held."""
    return f"{_stamp(when)}Deleted: {text}"


def update_text(old: str, new: str, when: str | None) -> str:
    """How an update is kept: the old content and what replaced it."""
    return f"{_stamp(when)}Updated: {old} -> {new}"


def _stamp(when: str | None) -> str:
    # The date is part of the memory: interval and "when did it change" questions need it.
    return f"[{when[:10]}] " if when else ""


def dumps_compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
