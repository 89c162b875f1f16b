"""``memaudit.result/1`` records: built, encoded and read in one place.

A result file is JSONL, one record per (package, budget). The record of a solved budget is
``SolveResult.to_record()`` (the solver layer, below this one, owns its fields and the format
string, :data:`RESULT_FORMAT`, re-exported here); the record of a failure is
:func:`error_record`. Records are encoded here (:func:`encode_records`: one compact UTF-8 line
each, ``format`` first), and every reader of a result file (resume, export, report) goes through
:func:`iter_records` or :func:`read_results_file`, so that they agree on what a line is: the
bytes up to a ``\\n`` (a ``\\u2028`` inside a string is text, not a line break).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..errors import PackageError
from ..solve.exact import RESULT_FORMAT

__all__ = [
    "RECORD_START", "RESULT_FORMAT", "ResultsFile", "encode_record", "encode_records", "error_record",
    "iter_records", "parse_results", "plain_number", "read_records", "read_results_file",
]

# Every record this module encodes starts with these bytes (``format`` is always the first key
# and the encoding is compact), so an incomplete last line a killed writer left behind can be
# told apart from a line that some other program wrote.
RECORD_START = b'{"format":"' + RESULT_FORMAT.encode() + b'"'
_RECORD_START_LOOSE = re.compile(rb'\{\s*"format"\s*:\s*"' + re.escape(RESULT_FORMAT.encode()) + b'"')

_ENCODE_OPTIONS = orjson.OPT_APPEND_NEWLINE | orjson.OPT_SERIALIZE_NUMPY


def plain_number(x: float) -> float | int:
    """Integral floats as ints, so records read ``"budget": 8`` rather than ``8.0``."""
    return int(x) if float(x).is_integer() and abs(x) < 2**53 else float(x)


def error_record(
    message: str,
    *,
    source: str | None = None,
    package_id: str | None = None,
    budget: float | None = None,
) -> dict[str, Any]:
    """The record of a package (or one budget of it) that could not be scored."""
    return {
        "format": RESULT_FORMAT,
        "package_id": package_id,
        "source": source,
        "budget": None if budget is None else plain_number(budget),
        "status": "error",
        "proven_optimal": False,
        "error": message,
    }


def encode_records(records: Iterable[dict[str, Any]]) -> bytes:
    """JSONL bytes of ``records``: one compact UTF-8 line each, ready for one ``write``.

    Raises ``TypeError`` for a value JSON cannot hold (NaN and infinities become ``null``,
    as in every JSON encoder that does not refuse them; the records built here hold none).
    """
    return b"".join(orjson.dumps(r, option=_ENCODE_OPTIONS) for r in records)


def encode_record(record: dict[str, Any]) -> str:
    """One record as a line of text without its newline (for printing)."""
    return orjson.dumps(record, option=orjson.OPT_SERIALIZE_NUMPY).decode("utf-8")


def _decode(line: bytes, source: str, number: int) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        raise PackageError("not a JSON record", source=source, record=f"line {number}") from None


def _lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """Numbered lines of ``data`` (split at ``\\n`` only), blank ones left out."""
    for number, line in enumerate(data.split(b"\n"), start=1):
        if line.strip():
            yield number, line


def iter_records(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line number, decoded JSON value) for every non-blank line of a result file."""
    source = str(path)
    for number, line in _lines(Path(path).read_bytes()):
        yield number, _decode(line, source, number)


def read_records(path: str | Path) -> list[Any]:
    """Every record of a result file, in file order (``PackageError`` at a non-JSON line)."""
    return [record for _, record in iter_records(path)]


@dataclass
class ResultsFile:
    """What a result file holds, checked line by line, before anyone modifies it.

    ``complete_bytes`` is the length of the file's complete lines; anything after it is the
    incomplete last line of a writer that was killed in the middle of a write (``torn_tail``).
    """

    source: str
    records: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    complete_bytes: int = 0
    torn_tail: bytes = b""


def is_record_start(tail: bytes) -> bool:
    """Whether ``tail`` is the beginning of a result record (or of its first bytes)."""
    return RECORD_START.startswith(tail) or _RECORD_START_LOOSE.match(tail) is not None


def parse_results(data: bytes, source: str) -> ResultsFile:
    """Check that ``data`` is a result file; nothing is written.

    Every complete line must be a JSON object with ``"format": "memaudit.result/1"``. An
    incomplete last line (no ``\\n`` after it) is accepted only when it is the beginning of a
    result record, the mark of a killed writer; any other content makes the file not a result
    file, and ``PackageError`` names the first offending line.
    """
    cut = data.rfind(b"\n") + 1
    parsed = ResultsFile(source=source, complete_bytes=cut, torn_tail=data[cut:])
    if parsed.torn_tail.strip() and not is_record_start(parsed.torn_tail.lstrip()):
        number = data.count(b"\n") + 1
        raise PackageError(
            f"the last line is not a {RESULT_FORMAT} record (and has no line end)",
            source=source, record=f"line {number}",
        )
    for number, line in _lines(data[:cut]):
        record = _decode(line, source, number)
        if not isinstance(record, dict) or record.get("format") != RESULT_FORMAT:
            raise PackageError(f"expected a {RESULT_FORMAT} record", source=source,
                               record=f"line {number}", field="format")
        parsed.records.append((number, record))
    return parsed


def read_results_file(path: str | Path) -> ResultsFile:
    """:func:`parse_results` of the file at ``path``."""
    return parse_results(Path(path).read_bytes(), str(path))
