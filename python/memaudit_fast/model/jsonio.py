"""Strict JSON reading and safe writing shared by every reader and writer.

Strict means: NaN and infinities are not numbers, a number beyond the range of a double is
an error (not infinity), an object with a repeated key is an error (Python's ``json`` would
silently keep the last value), strings must be valid Unicode text (a lone surrogate such as
``"\\ud800"`` cannot be written as UTF-8), and nesting is capped (``MEMAUDIT_MAX_DEPTH``), so
no input reaches a recursion limit. Every defect becomes a :class:`PackageError` naming the
file, the record or line, the field (as a JSON path) and, for syntax errors, line and column.

Two decoders give the same answers:

* :func:`loads_fast` decodes with msgspec (C speed) and returns ``None`` whenever anything
  might be wrong, so that
* :func:`loads_strict` (the careful decoder, Python's ``json`` with hooks) can explain it.

Reading files goes through :func:`read_bytes` / :func:`read_text` (from :mod:`.lines`,
re-exported here): regular files only (a FIFO or ``/dev/zero`` is refused before anything is
read), within ``MEMAUDIT_MAX_FILE_BYTES``, counted after decompression for ``.gz``.

Writing goes through :class:`~.outputs.OutputPath` (see :mod:`.outputs`, re-exported here):
outputs are checked before any work, symbolic links at an output path are refused, nothing is
replaced without ``--force``, and every file is written atomically, so a full disk or a
permission error leaves nothing partial.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import orjson

from ..errors import PackageError
from .lines import (
    decode_utf8,
    escape_controls,
    open_fd,
    open_regular,
    path_label,
    read_bytes,
    read_capped,
)

#: The largest integer magnitude every double holds exactly (the spec's limit for numbers).
MAX_EXACT_INT = 2**53
# Python refuses to convert integers longer than this to or from text.
_MAX_INT_DIGITS = 4000


def cut(text: str, limit: int = 40) -> str:
    """``text`` shortened for a message (long numbers and strings are never echoed in full)."""
    if len(text) <= limit:
        return text
    tail = f"...({len(text)} chars)"
    return text[: max(limit - len(tail), 0)] + tail


def describe(value: Any) -> str:
    """Short description of a found value for error messages."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if value is None:
        return "null"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {ascii(shown) if _has_surrogate(shown) else repr(shown)}"
    if isinstance(value, int):
        text = str(value) if abs(value) < 10**60 else f"an integer of {len(str(abs(value)))} digits"
        return cut(text)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, _BadValue):
        return value.found
    return type(value).__name__


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


# ---------------------------------------------------------------------------------------------
# The careful decoder


class _BadValue:
    """What the careful decoder puts where a value cannot be kept (reported with its path)."""

    __slots__ = ("found", "problem")

    def __init__(self, found: str, problem: str) -> None:
        self.found = found
        self.problem = problem

    def at(self, where: str) -> None:
        """Add where the value is in the text (line and column) to the problem."""
        self.problem = f"{self.problem} ({where})"


class _Duplicates:
    """Dict key under which the careful decoder records the keys an object repeats."""


_DUPLICATES = _Duplicates()


def _parse_constant(name: str) -> _BadValue:
    return _BadValue(name, f"{name} is not a JSON number (write a finite number)")


def _parse_float(text: str) -> Any:
    value = float(text)
    problem = float_problem(text, value)
    return value if problem is None else _BadValue(cut(text), problem)


def float_problem(text: str, value: float) -> str | None:
    """Why the number written ``text`` (read as ``value``) cannot be kept as a double, if it
    cannot: beyond the range, a non-zero that underflows to 0, or a whole number beyond 2^53
    that the double rounds (an error, not a rounding, as for integers)."""
    if value in (float("inf"), float("-inf")):
        return f"the number {cut(text)} is beyond the range of a double (about 1.8e308); write a smaller number"
    if value == 0.0 and any(d in "123456789" for d in text.lower().partition("e")[0]):
        return (f"the number {cut(text)} is below the smallest double (about 4.9e-324) and would be read as 0; "
                "write 0 or a larger number")
    if abs(value) >= MAX_EXACT_INT:
        from decimal import Decimal, InvalidOperation

        try:
            exact = Decimal(text) == Decimal(value)
        except InvalidOperation:
            exact = False
        if not exact:
            return (f"the number {cut(text)} is beyond 2^53 = 9007199254740992 and not exactly a double (it would "
                    f"be read as {value:.17g}); write it exactly or smaller")
    return None


def _parse_int(text: str) -> Any:
    if len(text) > _MAX_INT_DIGITS:
        return _BadValue(f"an integer of {len(text)} digits",
                         f"an integer of {len(text)} digits is far beyond what a double holds")
    return int(text)


def _pairs_hook(repeats: list[list[Any]]) -> Callable[[list[tuple[str, Any]]], dict[Any, Any]]:
    """An object hook that records, per object and in the decoder's (post-)order, its repeated keys."""

    def pairs(items: list[tuple[str, Any]]) -> dict[Any, Any]:
        out: dict[Any, Any] = dict(items)
        if len(out) != len(items):  # rare: remember the repeated keys for the message
            seen: set[str] = set()
            repeated: list[Any] = []
            for key, _ in items:
                if key in seen and key not in repeated:
                    repeated.append(key)
                seen.add(key)
            out[_DUPLICATES] = repeated
            repeats.append(repeated)
        return out

    return pairs


# Strings and the structure around them: enough to find each object's keys in the text.
_KEY_SCAN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:]', re.DOTALL)


def _repeat_positions(text: str) -> list[list[int]]:
    """Per object that repeats a key, in the order its closing brace comes (the decoder's
    order), the text offset of each repeated key's first repeat."""
    out: list[list[int]] = []
    stack: list[tuple[set[str], list[str], list[int]] | None] = []
    last_string: tuple[str, int] | None = None
    for match in _KEY_SCAN.finditer(text):
        token = match.group()
        if token[0] == '"':
            last_string = (token, match.start())
            continue
        if token == ":" and last_string is not None and stack and stack[-1] is not None:
            seen, repeated, positions = stack[-1]
            key = json.loads(last_string[0])
            if key in seen:
                if key not in repeated:
                    repeated.append(key)
                    positions.append(last_string[1])
            else:
                seen.add(key)
        elif token == "{":
            stack.append((set(), [], []))
        elif token == "[":
            stack.append(None)
        elif token in "]}" and stack:
            top = stack.pop()
            if top is not None and top[2]:
                out.append(top[2])
        last_string = None
    return out


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)
# Strings (skipped) and the values the careful decoder may turn into markers, in text order.
_VALUE_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|-?Infinity|NaN|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?', re.DOTALL)


def _decoder(markers: list[_BadValue], repeats: list[list[Any]]) -> json.JSONDecoder:
    """A careful decoder that records, in text order, every marker it makes."""

    def keep(marker: Any) -> Any:
        if isinstance(marker, _BadValue):
            markers.append(marker)
        return marker

    return json.JSONDecoder(
        parse_constant=lambda name: keep(_parse_constant(name)),
        parse_float=lambda text: keep(_parse_float(text)),
        parse_int=lambda text: keep(_parse_int(text)),
        object_pairs_hook=_pairs_hook(repeats),
    )


def _bad_token(token: str) -> bool:
    if token in ("NaN", "Infinity", "-Infinity"):
        return True
    if any(c in token for c in ".eE"):
        return float(token) in (float("inf"), float("-inf"))
    return len(token) > _MAX_INT_DIGITS


def _locate_markers(text: str, markers: list[_BadValue], at: Callable[[int], str]) -> None:
    """Give each marker the line and column of its value (the k-th bad token is the k-th marker)."""
    positions = (m.start() for m in _VALUE_TOKEN.finditer(text) if m.group()[0] != '"' and _bad_token(m.group()))
    for marker, pos in zip(markers, positions):
        marker.at(at(pos))


def _locate_repeats(text: str, repeats: list[list[Any]], at: Callable[[int], str]) -> None:
    """Turn each recorded repeated key into (key, where its repeat is in the text)."""
    for keys, positions in zip(repeats, _repeat_positions(text)):
        keys[:] = [(key, at(pos)) for key, pos in zip(keys, positions)] + [(key, None) for key in keys[len(positions):]]


def _line_column(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    return f"line {line} column {pos - (text.rfind(chr(10), 0, pos) + 1) + 1}"


def _too_deep(text: str, limit: int) -> int | None:
    """The offset of the first array or object nested deeper than ``limit`` (None: none is)."""
    if text.count("[") + text.count("{") <= limit:
        return None
    depth = 0
    for match in _TOKEN.finditer(text):
        char = text[match.start()]
        if char in "[{":
            depth += 1
            if depth > limit:
                return match.start()
        elif char in "]}":
            depth -= 1
    return None


def parse_careful(text: str, *, source: str, record: str | None = None, max_depth: int | None = None) -> Any:
    """Parse JSON text; syntax and depth errors raise, bad values stay as markers.

    The markers (and duplicate keys) are found by :func:`find_defects`. Most callers want
    :func:`loads_strict`, which does both. ``max_depth`` defaults to the current limits'.
    """
    from .limits import current_limits

    limit = current_limits().max_depth if max_depth is None else max_depth
    where = record

    def at(pos: int) -> str:
        return _line_column(text, pos) if record is None else f"{record} column {pos + 1}".strip()

    deep = _too_deep(text, limit)
    if deep is not None:
        raise PackageError(
            f"arrays and objects nest more than {limit} levels deep; a package needs a few "
            "(raise MEMAUDIT_MAX_DEPTH if genuine)",
            source=source, record=at(deep),
        )
    markers: list[_BadValue] = []
    repeats: list[list[Any]] = []
    try:
        data = _decoder(markers, repeats).decode(text)
        if markers:
            _locate_markers(text, markers, at)
        if repeats:
            _locate_repeats(text, repeats, at)
        return data
    except json.JSONDecodeError as exc:
        where = at(exc.pos)
        hint = "; the file may be truncated or hand-edited" if record is None else ""
        if exc.pos == 0 and text.startswith("\ufeff"):
            raise PackageError("starts with a byte-order mark (U+FEFF), which JSON does not allow; save it as "
                               "UTF-8 without BOM (e.g. sed -i '1s/^\\xEF\\xBB\\xBF//' FILE)",
                               source=source, record=where) from None
        if record is None and exc.msg == "Extra data" and text[exc.pos:exc.pos + 1] == "{":
            # One object after another: a set of packages one per line, under another suffix.
            hint = "; it holds more than one JSON object, as a set of packages one per line does: name it .jsonl"
        raise PackageError(f"not valid JSON ({exc.msg}){hint}", source=source, record=where) from None
    except RecursionError:
        raise PackageError(
            "arrays and objects nest too deeply to read", source=source, record=where
        ) from None


def _path_text(path: list[Any]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out


def find_defects(data: Any, *, limit: int = 50) -> list[tuple[list[Any], str]]:
    """(JSON path, problem) for every value the careful decoder could not keep.

    Lone surrogates in strings and keys, NaN / infinities / out-of-range numbers, repeated
    keys. The duplicate markers are removed from ``data`` on the way. Iterative, so depth
    costs nothing.
    """
    found: list[tuple[list[Any], str]] = []
    stack: list[tuple[Any, list[Any]]] = [(data, [])]
    while stack and len(found) < limit:
        value, path = stack.pop()
        if isinstance(value, dict):
            if _DUPLICATES in value:
                for entry in value.pop(_DUPLICATES):
                    key, where = entry if isinstance(entry, tuple) else (entry, None)
                    place = f" (again at {where})" if where else ""
                    found.append((path + [key], f"key {key!r} appears twice in one object{place}"))
            items = list(value.items())
            for key, child in reversed(items):
                if _has_surrogate(key):
                    found.append((path + [key], _surrogate_problem(key, "key")))
                stack.append((child, path + [key]))
        elif isinstance(value, list):
            for index in range(len(value) - 1, -1, -1):
                stack.append((value[index], path + [index]))
        elif isinstance(value, str):
            if _has_surrogate(value):
                found.append((path, _surrogate_problem(value, "string")))
        elif isinstance(value, _BadValue):
            found.append((path, value.problem))
    return found


def _surrogate_problem(text: str, what: str) -> str:
    k = next(i for i, ch in enumerate(text) if 0xD800 <= ord(ch) <= 0xDFFF)
    return (f"the {what} holds a lone surrogate ({ascii(text[k])[1:-1]}) at character {k}, which "
            "is not Unicode text; fix or remove that escape")


def loads_strict(text: str | bytes, *, source: str, record: str | None = None) -> Any:
    """Parse JSON text, turning every defect into a PackageError naming where it is."""
    if isinstance(text, bytes):
        text = decode_utf8(text, source=source, record=record)
    data = parse_careful(text, source=source, record=record)
    defects = find_defects(data, limit=1)
    if defects:
        path, problem = defects[0]
        raise PackageError(problem, source=source, record=record, field=_path_text(path) or None)
    return data


# ---------------------------------------------------------------------------------------------
# The fast decoder

_fast_decode = msgspec.json.Decoder().decode
_fast_encode = msgspec.json.Encoder().encode


# The shape of number text: digits as 9, exponent letters as e, signs and points as they are.
_SHAPE = bytes(57 if 48 <= b <= 57 else 101 if b in (69, 101) else b if b in (43, 45, 46) else 32 for b in range(256))
_FAR_SHAPES = (b"9e999", b"9e-999", b"9e+999", b"9e99", b"9e+99", b"9" * 16 + b".", b"9" * 16 + b"e",
               b"." + b"9" * 300)


def _far_number(raw: bytes) -> bool:
    """Whether ``raw`` may hold a number a double cannot keep as written (:func:`float_problem`):
    an exponent of three digits or of two above 0, 16 digits before a point or an exponent, or
    300 after a point. Integers do not count: msgspec keeps them whole, for the validator to
    judge. Text in strings may look so too (an id e1e99): it only costs a careful decode.
    (A regex took 0.3 ms on 18 KB; this takes 0.05 ms, on a path the core's scanner doubted.)"""
    shape = raw.translate(_SHAPE)
    return any(far in shape for far in _FAR_SHAPES)


def loads_fast(raw: bytes, max_depth: int) -> Any | None:
    """Decode JSON at C speed; ``None`` whenever the careful decoder must look.

    Both decoders used here reject NaN, infinities, numbers beyond a double, bad UTF-8 and
    lone surrogates by themselves, but keep the last of repeated keys. Repeated keys are
    caught by encoding the value again. Text written by a compact encoder (every package set
    written here) comes back byte for byte, which proves that no key was dropped and that
    every value is the text's own; orjson decodes and encodes that common case, the fastest
    pair. Anything else is decoded by msgspec (which keeps integers of any size, for the
    validator to judge) and checked by counting colons: re-encoding the decoded value writes
    one colon per key it kept plus the colons inside its strings; the input holds one per key
    it had, plus the colons in its strings (an escaped colon ``\\u003a`` is counted through
    its text). The two counts are equal exactly when no key was dropped (an escape spelt
    oddly only costs a careful decode).
    """
    if len(raw.translate(None, _NOT_OPENING)) > max_depth and _depth_of(raw) > max_depth:
        return None
    try:
        data = orjson.loads(raw)
        again = orjson.dumps(data)
    except (orjson.JSONDecodeError, orjson.JSONEncodeError, RecursionError):
        pass
    else:
        # Equal bytes are a proof, and a memcmp. (orjson reads an integer beyond 64 bits as
        # a float; such a value never encodes back to its own text, so it never passes here.)
        if raw.startswith(again) and (len(raw) == len(again) or raw[len(again):].isspace()):
            return data
    if _far_number(raw):  # msgspec would read 1e-400 as 0 and 2^53 + 1.0 as 2^53
        return None
    try:
        data = _fast_decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    try:
        again = _fast_encode(data)
    except (msgspec.EncodeError, RecursionError, OverflowError):
        return None
    if raw.startswith(again) and (len(raw) == len(again) or raw[len(again):].isspace()):
        return data
    colons = raw.count(b":")
    if b"\\u003" in raw:  # JSON writes escapes with a lower-case u
        colons += raw.count(b"\\u003a") + raw.count(b"\\u003A")
    if again.count(b":") != colons:
        return None
    return data


_NOT_BRACKET = bytes(range(256)).translate(None, b'[]{}"')
_NOT_OPENING = bytes(range(256)).translate(None, b"[{")
_STRING = re.compile(rb'"[^"]*"')


def _depth_of(raw: bytes) -> int:
    """How deeply arrays and objects nest in valid JSON ``raw`` (C-speed steps only)."""
    import numpy as np

    # Drop escaped backslashes and quotes, keep quotes and brackets, drop strings: brackets remain.
    skeleton = raw.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_BRACKET)
    brackets = np.frombuffer(_STRING.sub(b"", skeleton), dtype=np.uint8)
    if brackets.size == 0:
        return 0
    steps = np.where((brackets == 91) | (brackets == 123), 1, -1)
    return int(np.cumsum(steps).max())


def dumps(data: Any, *, indent: int | None = 1) -> str:
    """JSON text of ``data`` (UTF-8 kept as is; never NaN)."""
    try:
        raw = _fast_encode(data)
    except (msgspec.EncodeError, TypeError, RecursionError, OverflowError):
        return json.dumps(data, ensure_ascii=False, indent=indent, allow_nan=False)
    if indent:
        raw = msgspec.json.format(raw, indent=indent)
    return raw.decode("utf-8")


# ---------------------------------------------------------------------------------------------
# Reading files (the readers themselves live in .lines, re-exported above)


def read_text(path: Path) -> str:
    """Read a UTF-8 text file (gzip when the name ends in .gz), within the file-size limit."""
    return decode_utf8(read_bytes(path), source=path_label(path))


# Writing goes through one helper, kept in its own module and re-exported here.
from .outputs import (  # noqa: E402
    OutputPath,
    check_output_path,
    current_umask,
    safe_name,
    write_atomic,
)

__all__ = [
    "MAX_EXACT_INT", "OutputPath", "check_output_path", "current_umask", "cut", "decode_utf8", "describe",
    "dumps", "escape_controls", "find_defects", "is_number", "loads_fast", "loads_strict", "open_fd", "open_regular",
    "parse_careful", "path_label", "read_bytes", "read_capped", "read_text", "safe_name", "write_atomic",
]
