"""Strict JSON reading and safe writing shared by every reader and writer.

Strict means: NaN and infinities are not numbers, and an object with a repeated key is an
error (Python's ``json`` would silently keep the last value, which would change what a
user gave without saying so).
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from ..errors import PackageError, UsageError


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (write a finite number)")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):  # rare: find the repeated key for the message
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"key {key!r} appears twice in one object")
            seen.add(key)
    return out


def loads_strict(text: str, *, source: str, record: str | None = None) -> Any:
    """Parse JSON text, turning every defect into a PackageError naming where it is."""
    try:
        return json.loads(
            text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicate_keys
        )
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}" if record is None else record
        raise PackageError(
            f"not valid JSON ({exc.msg}); the file may be truncated or hand-edited",
            source=source,
            record=where,
        ) from None
    except ValueError as exc:
        raise PackageError(str(exc), source=source, record=record) from None


def read_text(path: Path) -> str:
    """Read a UTF-8 text file (gzip when the name ends in .gz), within the file-size limit."""
    from .limits import current_limits

    cap = current_limits().max_file_bytes
    too_large = PackageError(
        f"larger than the limit of {cap} bytes; raise it with MEMAUDIT_MAX_FILE_BYTES if genuine",
        source=str(path),
    )
    try:
        if path.name.endswith(".gz"):
            # Read at most cap + 1 bytes of the decompressed stream: a gzip bomb stops here.
            with gzip.open(path, "rb") as handle:
                raw = handle.read(cap + 1)
        else:
            if path.stat().st_size > cap:
                raise too_large
            raw = path.read_bytes()
        if len(raw) > cap:
            raise too_large
        return raw.decode("utf-8")
    except FileNotFoundError:
        raise PackageError("file not found", source=str(path)) from None
    except UnicodeDecodeError as exc:
        raise PackageError(
            f"not UTF-8 text (byte {exc.start}); expected a JSON file", source=str(path)
        ) from None
    except (OSError, EOFError) as exc:
        raise PackageError(f"cannot read: {exc}", source=str(path)) from None


def dumps(data: Any, *, indent: int | None = 1) -> str:
    return json.dumps(data, ensure_ascii=False, indent=indent, allow_nan=False)


def check_output_path(dst: Path, *, inputs: tuple[Path, ...] = (), overwrite: bool = False) -> None:
    """Refuse to write over an input, and over any existing file unless asked to."""
    resolved = dst.resolve()
    for src in inputs:
        if src.resolve() == resolved:
            raise UsageError(f"{dst}: refusing to write over the input; choose another output path")
    if dst.exists() and not overwrite:
        raise UsageError(f"{dst} already exists; choose another path or pass --force")


def write_atomic(dst: Path, writer: Callable[[Any], None], *, binary: bool = False) -> None:
    """Write through a temporary file in the same directory, then rename into place.

    A crash leaves either the old file or the complete new one, never half of it.
    """
    dst.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dst.name}.", suffix=".tmp", dir=dst.parent)
    try:
        handle: IO[Any] = (
            os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="\n")
        )
        with handle:
            writer(handle)
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp makes the file private (0600); give it the mode a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, dst)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def describe(value: Any) -> str:
    """Short description of a found value for error messages."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if value is None:
        return "null"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {shown!r}"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
