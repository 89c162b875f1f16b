"""``memaudit.result/1`` records: built, encoded and read in one place.

A result file is JSONL, one record per (package, budget). The record of a solved budget is
``SolveResult.to_record()`` (the solver layer, below this one, owns its fields and the format
string, :data:`RESULT_FORMAT`, re-exported here); the record of a failure is
:func:`error_record`. Records are encoded here (:func:`encode_records`: one compact UTF-8 line
each, ``format`` first). Result files are read here: :func:`read_records` for export and
report (strict JSON, stdin and ``.gz`` too), :func:`parse_results` for resume (fast, and it
tells a killed writer's incomplete last line from foreign content). Both split lines at
``\\n`` only (a ``\\u2028`` inside a string is text, not a line break) and refuse what is not a
result record with the same message (:func:`check_record`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..errors import PackageError
from ..model.jsonio import MAX_EXACT_INT, describe, loads_strict, path_label, read_text
from ..model.jsonio import cut as shorten
from ..model.lines import nonblank_lines
from ..model.package import FORMAT as PACKAGE_FORMAT
from ..solve.exact import RESULT_FORMAT
from ..solve.exact import STATUSES as SOLVE_STATUSES

__all__ = [
    "PACKAGE_FORMAT", "RECORD_START", "RECORD_START_PATTERN", "RESULT_FORMAT", "STATUSES", "ResultsFile", "check_record", "encode_record",
    "encode_records", "encode_records_with", "error_record", "parse_results", "plain_number", "read_labelled_records", "read_records", "read_results_file",
    "read_results_text", "solved_record", "validate_record",
]

# Every record this module encodes starts with these bytes (``format`` is always the first key
# and the encoding is compact), so an incomplete last line a killed writer left behind can be
# told apart from a line that some other program wrote.
RECORD_START = b'{"format":"' + RESULT_FORMAT.encode() + b'"'
RECORD_START_PATTERN = re.compile(rb'\{\s*"format"\s*:\s*"' + re.escape(RESULT_FORMAT.encode()) + b'"')

#: The longest cause an error record holds (a package's own errors are far shorter).
MAX_ERROR_CHARS = 2000

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
    """The record of a package (or one budget of it) that could not be scored.

    A message longer than :data:`MAX_ERROR_CHARS` is cut: a cause that echoes its input (a
    foreign exception quoting the package's text, say) never copies a package into the results.
    """
    return {
        "format": RESULT_FORMAT,
        "package_id": package_id,
        "source": source,
        "budget": None if budget is None else plain_number(budget),
        "status": "error",
        "proven_optimal": False,
        "error": shorten(message, MAX_ERROR_CHARS),
    }


def failed_package_id(exc: BaseException, known: str | None = None) -> str | None:
    """The id of the package an error is about, for its error record: ``known`` (the id read
    before the error), else the id the error names (a PackageError raised once the reader had
    checked the id), else None."""
    if known is not None:
        return known
    named = getattr(exc, "package_id", None)
    return named if isinstance(named, str) and named else None


def solved_record(compiled: Any, raw: Any) -> dict[str, Any]:
    """The record of one budget straight from the core's result ``raw`` for ``compiled``.

    The same record as ``SolveResult.to_record()`` of the :func:`~..solve.exact.solve` result it
    stands for (a package with ``group_capacity`` 1, no hand-off), without building that
    result: the batch's lean path. Tests pin the two to the same bytes.
    """
    ids = compiled.candidate_ids
    selected = raw.selected
    proven = bool(raw.proven_optimal)
    return {
        "format": RESULT_FORMAT,
        "package_id": compiled.package_id,
        "budget": plain_number(raw.budget),
        "saturation": compiled.saturation_name,
        "weights_rule": compiled.weights_rule,
        "opt": float(raw.value),
        "upper_bound": float(raw.upper_bound),
        "gap": float(raw.gap),
        "status": str(raw.status),
        "proven_optimal": proven,
        "selected": [ids[i] for i in (selected.tolist() if hasattr(selected, "tolist") else selected)],
        "cost": plain_number(raw.cost),
        "nodes": int(raw.nodes),
        "seconds": float(raw.seconds),
        "proved_by": "branch_and_bound" if proven else None,
    }


def encode_records(records: Iterable[dict[str, Any]]) -> bytes:
    """JSONL bytes of ``records``: one compact UTF-8 line each, ready for one ``write``.

    Raises ``TypeError`` for a value JSON cannot hold (NaN and infinities become ``null``,
    as in every JSON encoder that does not refuse them; the records built here hold none).
    """
    return b"".join(orjson.dumps(r, option=_ENCODE_OPTIONS) for r in records)


def encode_records_with(records: Iterable[dict[str, Any]], extra: dict[str, Any]) -> bytes:
    """The bytes of ``encode_records([{**r, **extra} for r in records])`` (keys of ``extra``
    that a record has are not allowed), with ``extra`` encoded once: the fields a batch adds
    to every record of a package."""
    if not extra:
        return encode_records(records)
    tail = b"," + orjson.dumps(extra, option=orjson.OPT_SERIALIZE_NUMPY)[1:] + b"\n"
    out = []
    for record in records:
        if not record.keys().isdisjoint(extra):
            raise ValueError(f"the record has keys of its own among {sorted(extra)}")
        body = orjson.dumps(record, option=orjson.OPT_SERIALIZE_NUMPY)
        out.append(body[:-1] + tail if len(body) > 2 else orjson.dumps(extra, option=_ENCODE_OPTIONS))
    return b"".join(out)


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
    for number, line, _ in nonblank_lines(data):
        yield number, line


def check_record(record: Any, source: str, where: str) -> dict[str, Any]:
    """``record`` when it is a result record, else the PackageError that says what it is."""
    fmt = record.get("format") if isinstance(record, dict) else None
    if fmt == PACKAGE_FORMAT:
        raise PackageError(
            "this holds packages (memaudit.package/1: a package or a package set), not results; score it first, e.g. "
            f"memaudit batch {source} --out results.jsonl", source=source, record=where, field="format")
    if not isinstance(record, dict) or fmt != RESULT_FORMAT:
        found = f"format {fmt!r}" if isinstance(record, dict) else f"a JSON {type(record).__name__}"
        raise PackageError(f"found {found}, expected a {RESULT_FORMAT} record (from batch, solve --json, "
                           "sweep --json or score-store --json)", source=source, record=where, field="format")
    return record


#: The status of a result record (the spec's list): a solve's, or ``error``.
STATUSES = (*SOLVE_STATUSES, "error")

_INT64 = 2**63


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and abs(value) < float("inf")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -_INT64 <= value < _INT64


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


# Optional fields: the test each value meets (null is always allowed) and what it should be.
_NUMBER = (_is_number, "a number")
_INT = (_is_int, "an integer")
_TEXT = (lambda v: isinstance(v, str), "a string")
_BOOL = (lambda v: isinstance(v, bool), "true or false")
_IDS = (_is_str_list, "a list of id strings")
_OBJECT = (lambda v: isinstance(v, dict), "an object")
_CAPACITY = (lambda v: _is_int(v) and 1 <= v <= MAX_EXACT_INT, "an integer from 1 to 2^53")
# Every field a writer of records puts at the top level (batch's digests and options, sweep's
# ablation), so that no reader meets a known field of a type it does not expect.
_OPTIONAL = {
    "source": _TEXT, "distribution": _TEXT, "budget_frac": _NUMBER, "proven_optimal": _BOOL,
    "upper_bound": _NUMBER, "gap": _NUMBER, "cost": _NUMBER, "nodes": _INT, "seconds": _NUMBER,
    "saturation": _TEXT, "weights_rule": _TEXT, "group_capacity": _CAPACITY, "proved_by": _TEXT, "error": _TEXT,
    "member_digest": _TEXT, "options_digest": _TEXT, "options": _OBJECT, "ablation": _OBJECT,
}
_BLOCKS = {
    "size": {"candidates": _INT, "groups": _INT, "units": _INT, "nonzeros": _INT},
    "certificate": {"solver": _TEXT, "version": _TEXT, "status": _TEXT, "value": _NUMBER, "agrees": _BOOL,
                    "seconds": _NUMBER},
}
_WRITER = {"value": _NUMBER, "ratio": _NUMBER, "cost": _NUMBER, "selected": _IDS}


def validate_record(record: Any, source: str, where: str) -> dict[str, Any]:
    """``record`` when it is a well-formed result record, else a PackageError naming the file,
    the line, the field, what was found and what is allowed.

    The checks every reader of results shares (export, report, the data frames), so that a
    file one of them takes the others take too. A solved record needs a ``package_id``, a
    ``status`` among :data:`STATUSES`, a ``budget`` and ``opt`` (``selected``, when given, is a
    list of ids); an ``error``
    record needs its ``error`` text and may lack the rest (its id and budget may be null or
    absent: a member that could not be parsed has no id).
    Fields a reader does not know are kept as they are.
    """
    record = check_record(record, source, where)

    def refuse(name: str, expected: str, *, value: Any = None, nested: bool = False) -> PackageError:
        present = nested or name in record
        shown = value if nested else record.get(name)
        found = f"found {describe(shown)}" if present else "missing"
        return PackageError(f"{found}, expected {expected}", source=source, record=where, field=name)

    status = record.get("status")
    if not isinstance(status, str) or status not in STATUSES:
        raise refuse("status", f"one of {', '.join(STATUSES)}")
    failed = status == "error"
    package_id = record.get("package_id")
    if not (isinstance(package_id, str) and package_id) and not (failed and package_id is None):
        raise refuse("package_id", "the package's id (a non-empty string)"
                     + ("; null only in an error record" if not failed else ""))
    budget = record.get("budget")
    # (as the readers take budgets: an integer past 2^53 is not one a double holds)
    exact = not isinstance(budget, int) or abs(budget) <= MAX_EXACT_INT
    if not (_is_number(budget) and budget >= 0 and exact) and not (failed and budget is None):
        raise refuse("budget", "a number >= 0, an integer at most 2^53"
                     + ("" if failed else " (null only in an error record)"))
    if failed:
        if not isinstance(record.get("error"), str):
            raise refuse("error", "the cause of the failure (a string)")
    else:
        if not _is_number(record.get("opt")):
            raise refuse("opt", "the value of the store found (a number); only an error record may lack it")
        if "selected" in record and not _is_str_list(record["selected"]):
            raise refuse("selected", "the store found: a list of candidate id strings (an empty list for none)")
    for name, (test, expected) in _OPTIONAL.items():
        if record.get(name) is not None and not test(record[name]):
            raise refuse(name, f"{expected} or null")
    for block, fields in _BLOCKS.items():
        value = record.get(block)
        if value is None:
            continue
        if not isinstance(value, dict):
            raise refuse(block, "an object or null")
        for name, (test, expected) in fields.items():
            if value.get(name) is not None and not test(value[name]):
                raise refuse(f"{block}.{name}", f"{expected} or null", value=value[name], nested=True)
    for block in ("writers", "systems"):
        value = record.get(block)
        if value is None:
            continue
        if not isinstance(value, dict):
            raise refuse(block, "an object with one entry per writer (or null)")
        if block == "systems":
            continue  # its entries are the importers' own blocks
        for name, fields in value.items():
            if not isinstance(fields, dict):
                raise refuse(f"{block}.{name}", "an object of the writer's value, ratio, cost and selected",
                             value=fields, nested=True)
            for key, (test, expected) in _WRITER.items():
                if fields.get(key) is not None and not test(fields[key]):
                    raise refuse(f"{block}.{name}.{key}", f"{expected} or null", value=fields[key], nested=True)
    return record


def read_results_text(path: str | Path) -> tuple[str, str]:
    """(text, label) of a results file; ``-`` is stdin; ``.gz`` is decompressed."""
    if str(path) == "-":
        from ..model.lines import read_stdin_text

        return read_stdin_text(), "<stdin>"
    return read_text(Path(path)), path_label(path)


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Every result record of a results file, in order (``-``: stdin; ``.gz`` decompressed).

    Each line is read strictly (duplicate keys, NaN and the like are errors). Raises
    PackageError (exit code 2) at the first line that is not a result record, and when the file
    holds no record at all.
    """
    return [record for _, record in read_labelled_records(path)]


def read_labelled_records(path: str | Path) -> list[tuple[str, dict[str, Any]]]:
    """:func:`read_records` with the place of each record (``line N``), for messages."""
    text, label = read_results_text(path)
    records: list[tuple[str, dict[str, Any]]] = []
    for number, line, last in nonblank_lines(text):
        where = f"line {number}"
        try:
            record = loads_strict(line, source=label, record=where)
        except PackageError:
            if last and is_record_start(line.lstrip().encode("utf-8", "surrogatepass")):
                raise PackageError("the last line is cut off (no line end): the file of a batch that was stopped "
                                   "while writing; run that batch again with --resume to complete it",
                                   source=label, record=where) from None
            if not records:
                _refuse_whole_document(text, label)
            raise
        records.append((where, validate_record(record, label, where)))
    if not records:
        raise PackageError(f"holds no {RESULT_FORMAT} records", source=label)
    return records


def without_superseded_errors(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """``records`` without the error records that a later success superseded.

    A resumed batch scores a failed member again and appends its records; the error record
    stays in the file (records are only appended). Counting failures or packages over the
    file's records would count that member twice: this drops every error record whose
    (member digest, options digest) also has a record that is not an error. Other records
    are kept, in order. The tables of :mod:`.frame` and :mod:`.export` read files through it.
    """
    records = list(records)
    scored = {(r.get("member_digest"), r.get("options_digest")) for r in records
              if r.get("status") != "error" and r.get("member_digest") is not None}
    return [r for r in records
            if r.get("status") != "error" or (r.get("member_digest"), r.get("options_digest")) not in scored]


def _refuse_whole_document(text: str, label: str) -> None:
    """A first line that is not JSON may open a pretty-printed document (a package, say): say
    what the whole text is when it parses, rather than blaming its first line."""
    try:
        whole = loads_strict(text, source=label)
    except PackageError:
        return
    check_record(whole, label, "the whole file")
    raise PackageError(f"holds one JSON document over several lines; a results file holds one "
                       f"{RESULT_FORMAT} record per line", source=label)


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
    return RECORD_START.startswith(tail) or RECORD_START_PATTERN.match(tail) is not None


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
        record = check_record(_decode(line, source, number), source, f"line {number}")
        parsed.records.append((number, record))
    return parsed


def read_results_file(path: str | Path) -> ResultsFile:
    """:func:`parse_results` of the file at ``path``."""
    return parse_results(Path(path).read_bytes(), path_label(path))
