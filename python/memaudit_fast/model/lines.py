"""JSONL lines of a file or a stream, within the readers' limits (one line, one stream)."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from ..errors import PackageError
from .jsonio import open_regular

__all__ = ["iter_lines", "iter_stream_lines"]


# Lines of a package set are ~10-100 KB: with the default 8 KB buffer, reading one takes several
# reads and joins; a larger buffer makes it one copy.
_LINE_BUFFER = 1 << 20


def iter_lines(path: Path, *, line_cap: int, stream_cap: int) -> Iterator[tuple[int, bytes | PackageError]]:
    """(line number, bytes) per line of a regular file, or a PackageError for a line that is
    too long (it is skipped without being held in memory) and, last, for a stream that is too
    long or unreadable. Memory stays within ``line_cap``.
    """
    handle = open_regular(path, _LINE_BUFFER)
    with handle:
        yield from iter_stream_lines(handle, str(path), line_cap=line_cap, stream_cap=stream_cap)


def iter_stream_lines(handle: IO[bytes] | gzip.GzipFile, source: str, *, line_cap: int,
                      stream_cap: int) -> Iterator[tuple[int, bytes | PackageError]]:
    """:func:`iter_lines` of an open binary stream (stdin, say), named ``source`` in errors."""
    total = 0
    number = 0
    while True:
        try:
            line = handle.readline(line_cap + 1)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            yield number + 1, PackageError(f"cannot read further: {exc}", source=source,
                                           record=f"line {number + 1}")
            return
        if not line:
            return
        number += 1
        total += len(line)
        if len(line) > line_cap and not line.endswith(b"\n"):
            try:
                while True:  # skip the rest of the line in bounded pieces
                    piece = handle.readline(1 << 20)
                    total += len(piece)
                    if not piece or piece.endswith(b"\n") or total > stream_cap:
                        break
            except (OSError, EOFError, gzip.BadGzipFile):
                pass
            yield number, PackageError(
                f"longer than the limit of {line_cap} bytes for one line; raise it with "
                "MEMAUDIT_MAX_FILE_BYTES if genuine", source=source, record=f"line {number}")
        else:
            yield number, line
        if total > stream_cap:
            yield number + 1, PackageError(
                f"holds more than the limit of {stream_cap} bytes (after decompression); the "
                "lines after this were not read; raise MEMAUDIT_MAX_SET_BYTES if genuine",
                source=source, record=f"line {number + 1}")
            return
