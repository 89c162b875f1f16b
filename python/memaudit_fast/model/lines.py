"""JSONL lines of a file or a stream, within the readers' limits (one line, one stream)."""

from __future__ import annotations

import gzip
import io
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ..errors import PackageError
from .jsonio import open_regular

__all__ = ["LINE_BUFFER", "gunzip_as_it_arrives", "iter_lines", "iter_stream_lines", "read_stdin_text", "stdin_stream", "stdin_too_large"]


# Lines of a package set are ~10-100 KB: with the default 8 KB buffer, reading one takes several
# reads and joins; a larger buffer makes it one copy.
LINE_BUFFER = 1 << 20


def iter_lines(path: Path, *, line_cap: int, stream_cap: int) -> Iterator[tuple[int, bytes | PackageError]]:
    """(line number, bytes) per line of a regular file, or a PackageError for a line that is
    too long (it is skipped without being held in memory) and, last, for the line within which
    the stream passes ``stream_cap`` (that line and the ones after it are not read) or the line
    that cannot be read. Memory stays within ``line_cap`` and ``stream_cap``.
    """
    handle = open_regular(path, LINE_BUFFER)
    with handle:
        yield from iter_stream_lines(handle, str(path), line_cap=line_cap, stream_cap=stream_cap)


def _set_cap_error(stream_cap: int, source: str, number: int, also: str = "") -> PackageError:
    return PackageError(
        f"{also}the set passes the limit of {stream_cap} bytes (after decompression) within this line, so "
        "this line and the lines after it were not read; raise MEMAUDIT_MAX_SET_BYTES if genuine",
        source=source, record=f"line {number}")


def iter_stream_lines(handle: IO[bytes] | gzip.GzipFile, source: str, *, line_cap: int,
                      stream_cap: int) -> Iterator[tuple[int, bytes | PackageError]]:
    """:func:`iter_lines` of an open binary stream (stdin, say), named ``source`` in errors."""
    total = 0
    number = 0
    while True:
        room = stream_cap - total  # a line longer than what the set has left is never read whole
        try:
            line = handle.readline(min(line_cap, room) + 1)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            yield number + 1, PackageError(f"cannot read further: {exc}", source=source,
                                           record=f"line {number + 1}")
            return
        if not line:
            return
        number += 1
        total += len(line)
        if len(line) > room:
            yield number, _set_cap_error(stream_cap, source, number)
            return
        if len(line) > line_cap and not line.endswith(b"\n"):
            try:
                while total <= stream_cap:  # skip the rest of the line in bounded pieces
                    piece = handle.readline(1 << 20)
                    total += len(piece)
                    if not piece or piece.endswith(b"\n"):
                        break
            except (OSError, EOFError, gzip.BadGzipFile):
                pass
            too_long = f"longer than the limit of {line_cap} bytes for one line (MEMAUDIT_MAX_FILE_BYTES)"
            if total > stream_cap:
                yield number, _set_cap_error(stream_cap, source, number, also=too_long + ", and ")
                return
            yield number, PackageError(f"{too_long}; raise it if genuine", source=source, record=f"line {number}")
        else:
            yield number, line


class _Gunzip(io.RawIOBase):
    """The decompressed bytes of a gzip stream (members one after another, as ``cat a.gz b.gz``
    makes them), each read giving what the compressed bytes that have arrived hold."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream
        self.inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self.pending = b""  # compressed bytes read and not yet given to zlib
        self.held = False  # zlib may hold output: the last call filled all the room it had
        self.member_open = False  # a member began and its end has not come

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        while True:
            if self.inflate.eof and self.pending:
                if not self.pending.strip(b"\0"):  # zeros after a member pad it, as gzip allows
                    self.pending = b""
                    continue
                self.inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)  # the next member
            if self.pending or self.held:
                try:
                    out = self.inflate.decompress(self.pending, len(view))
                except zlib.error as exc:
                    raise gzip.BadGzipFile(f"not valid gzip data ({exc})") from None
                self.held = len(out) == len(view)
                self.member_open = not self.inflate.eof
                self.pending = self.inflate.unconsumed_tail or self.inflate.unused_data
                if out:
                    view[:len(out)] = out
                    return len(out)
                continue
            read1 = getattr(self.stream, "read1", None)  # what has arrived, not a full 64 KB
            self.pending = read1(1 << 16) if read1 is not None else self.stream.read(1 << 16)
            if not self.pending:
                if self.member_open:
                    raise EOFError("the gzip stream ended before its end-of-stream marker")
                return 0


def gunzip_as_it_arrives(stream: IO[bytes]) -> IO[bytes]:
    """A gzip stream read from a pipe, decompressed as its bytes arrive: the lines of a flushed
    block come out at once, where :class:`gzip.GzipFile` waited for further input first (on a
    producer that pauses, lines already sent were not read)."""
    return io.BufferedReader(_Gunzip(stream), LINE_BUFFER)


def stdin_stream() -> IO[bytes]:
    """Standard input as bytes, decompressed as it arrives when it is gzip (``cat set.jsonl.gz
    | memaudit solve -`` reads what the .gz file would give). A text stream put in its place
    (``io.StringIO``, as tests and embedding programs do) is read through UTF-8."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        stream = io.BufferedReader(io.BytesIO(sys.stdin.read().encode("utf-8", "surrogatepass")), LINE_BUFFER)
    peek = getattr(stream, "peek", None)
    if peek is not None and peek(2)[:2] == b"\x1f\x8b":  # gzip's magic number
        return gunzip_as_it_arrives(stream)
    return stream


def read_stdin_text() -> str:
    """All of standard input as UTF-8 text (one JSON document, a results file), within the limit
    on what is read whole (``MEMAUDIT_MAX_FILE_BYTES``): a stream without end (``< /dev/zero``)
    stops there instead of filling memory."""
    from .jsonio import decode_utf8
    from .limits import current_limits

    cap = current_limits().max_file_bytes
    try:
        raw = stdin_stream().read(cap + 1)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise PackageError(f"cannot read: {exc}", source="<stdin>") from None
    if len(raw) > cap:
        raise stdin_too_large(cap)
    return decode_utf8(raw, source="<stdin>")


def stdin_too_large(cap: int) -> PackageError:
    """The error of a standard input read whole that holds more than ``cap`` bytes."""
    return PackageError(f"larger than the limit of {cap} bytes (after decompression); raise it with "
                        "MEMAUDIT_MAX_FILE_BYTES if genuine", source="<stdin>")
