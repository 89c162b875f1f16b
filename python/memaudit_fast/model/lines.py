"""Reading files and streams within the readers' limits: a regular file whole
(:func:`read_bytes`, within ``MEMAUDIT_MAX_FILE_BYTES``), or the JSONL lines of a file or a
stream (one line, one stream capped), and how a path is shown in messages (:func:`path_label`).
:mod:`.jsonio` re-exports the file readers."""

from __future__ import annotations

import gzip
import io
import os
import re
import stat
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, AnyStr

from ..errors import PackageError

__all__ = [
    "LINE_BUFFER", "decode_utf8", "escape_controls", "gunzip_as_it_arrives", "iter_lines", "iter_stream_lines",
    "nonblank_lines", "open_fd", "open_regular", "path_label", "read_bytes", "read_capped", "read_stdin_text",
    "stdin_stream", "stdin_too_large",
]


# Characters that would break a printed line or be invisible in it: C0 and C1 controls, DEL,
# and the Unicode line and paragraph separators.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def escape_controls(text: str) -> str:
    """``text`` with each control character written as its escape (a newline as ``\\n``), so a
    name that holds one stays on one printed line."""
    if _CONTROL.search(text) is None:
        return text
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def path_label(path: str | os.PathLike[str]) -> str:
    """A path as every message shows it: printable (undecodable bytes of a name as ``\\xNN``,
    control characters escaped), whatever the name holds."""
    return escape_controls(os.fsencode(path).decode("utf-8", "backslashreplace"))


def decode_utf8(raw: bytes, *, source: str, record: str | None = None) -> str:
    """UTF-8 bytes as text; a bad byte is reported with its line and column."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        where = f"line {line} column {col}" if record is None else f"{record} column {col}".strip()
        raise PackageError(
            f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}); save the file as UTF-8",
            source=source, record=where,
        ) from None



def _open_regular(path: Path) -> int:
    """A descriptor of ``path`` opened for reading, refused unless it is a regular file.

    ``O_NONBLOCK`` keeps a FIFO from blocking the open; the check is on the opened file
    itself, so nothing can swap it in between.
    """
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise PackageError("file not found", source=path_label(path)) from None
    except IsADirectoryError:
        raise PackageError("is a directory; expected a file", source=path_label(path)) from None
    except OSError as exc:
        raise PackageError(f"cannot read: {exc.strerror}", source=path_label(path)) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        kind = ("a directory" if stat.S_ISDIR(info.st_mode) else "a FIFO" if stat.S_ISFIFO(info.st_mode)
                else "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode)
                else "a socket" if stat.S_ISSOCK(info.st_mode) else "not a regular file")
        # A pipe (a FIFO, /dev/stdin, a shell's <(...)) can be read once, as '-' (standard input).
        hint = "; to read a stream, pipe it to the command as '-'" if stat.S_ISFIFO(info.st_mode) else ""
        raise PackageError(f"is {kind}; only regular files are read{hint}", source=path_label(path))
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return fd


class _OwningGzip(gzip.GzipFile):
    """A GzipFile that closes the file it reads from (GzipFile leaves a given fileobj open)."""

    def close(self) -> None:
        raw = self.fileobj
        try:
            super().close()
        finally:
            if raw is not None:
                raw.close()  # type: ignore[union-attr]


def open_regular(path: Path, buffering: int = -1) -> IO[bytes]:
    """A binary handle on a regular file (decompressed when the name ends in .gz)."""
    return open_fd(_open_regular(path), path, buffering)


def read_bytes(path: Path, *, cap: int | None = None) -> bytes:
    """The whole content of a regular file within the file-size limit (decompressed for .gz)."""
    from .limits import current_limits

    cap = current_limits().max_file_bytes if cap is None else cap
    too_large = PackageError(
        f"larger than the limit of {cap} bytes; raise it with MEMAUDIT_MAX_FILE_BYTES if genuine",
        source=path_label(path),
    )
    fd = _open_regular(path)
    try:
        if not path.name.endswith(".gz") and os.fstat(fd).st_size > cap:
            raise too_large
        size = os.fstat(fd).st_size
        with open_fd(fd, path) as handle:
            fd = -1
            # a gzip bomb or a growing file stops past the cap
            raw = read_capped(handle, cap, None if path.name.endswith(".gz") else size)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise PackageError(f"cannot read: {exc}", source=path_label(path)) from None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(raw) > cap:
        raise too_large
    return raw


# What a read asks for at a time when the size is not known: read(cap + 1) would ask the
# allocator for the whole cap at once (a cap of a terabyte fails so, whatever the file holds).
_READ_PIECE = 1 << 24


def read_capped(handle: Any, cap: int, size: int | None = None) -> bytes:
    """The bytes of ``handle`` up to ``cap + 1`` of them (more than ``cap`` means too large),
    read in pieces; ``size``: what the file is expected to hold, asked for in one read."""
    first = min(cap + 1, (size + 1) if size is not None else _READ_PIECE)
    raw = handle.read(first)
    if len(raw) < first or len(raw) > cap:
        return raw
    pieces = [raw]
    total = len(raw)
    while total <= cap:
        piece = handle.read(min(cap + 1 - total, _READ_PIECE))
        if not piece:
            break
        pieces.append(piece)
        total += len(piece)
    return b"".join(pieces)


def open_fd(fd: int, path: Path, buffering: int = -1) -> IO[bytes]:
    handle = os.fdopen(fd, "rb", buffering)
    if path.name.endswith(".gz"):
        return _OwningGzip(fileobj=handle, mode="rb")  # type: ignore[return-value]
    return handle


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
        yield from iter_stream_lines(handle, path_label(path), line_cap=line_cap, stream_cap=stream_cap)


def _set_cap_error(stream_cap: int, source: str, number: int, also: str = "") -> PackageError:
    return PackageError(
        f"{also}the set passes the limit of {stream_cap} bytes (after decompression) within this line, so "
        "this line and the lines after it were not read; raise MEMAUDIT_MAX_SET_BYTES if genuine",
        source=source, record=f"line {number}")


def iter_stream_lines(handle: IO[bytes] | gzip.GzipFile, source: str, *, line_cap: int,
                      stream_cap: int) -> Iterator[tuple[int, bytes | PackageError]]:
    """:func:`iter_lines` of an open binary stream (stdin, say), named ``source`` in errors.

    A run of blank lines may come as one item, numbered by its first line: its bytes are the
    run's (offsets stay right) and, like a blank line, it is blank (``not item.strip()``).
    Read line by line, a file of newlines cost about 0.65 s per MB.
    """
    peek = getattr(handle, "peek", None)
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
        if peek is not None and line.endswith(b"\n") and not line.strip():
            run = _blank_run(handle, peek, line, stream_cap - total)
            total += len(run) - len(line)
            yield number, run
            number += run.count(b"\n") - 1
            continue
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


_NOT_SPACE = re.compile(r"\S")
_NOT_SPACE_BYTES = re.compile(rb"\S")


def nonblank_lines(text: AnyStr) -> Iterator[tuple[int, AnyStr, bool]]:
    """(line number, line, whether it is the last) per line of ``text`` that is not blank
    (split at ``\\n`` only; blank: ``not line.strip()``). The blank lines between are passed
    over at C speed: a text of millions of newlines costs no Python step per line."""
    newline: Any = "\n" if isinstance(text, str) else b"\n"
    search = (_NOT_SPACE if isinstance(text, str) else _NOT_SPACE_BYTES).search
    pos = 0
    number = 1
    while True:
        found = search(text, pos)
        if found is None:
            return
        begin = text.rfind(newline, pos, found.start()) + 1 or pos
        number += text.count(newline, pos, begin)
        end = text.find(newline, found.start())
        last = end < 0
        end = len(text) if last else end
        yield number, text[begin:end], last
        pos = end + 1
        number += 1


# The most blank bytes gathered into one item: memory stays bounded whatever the run's length.
_BLANK_RUN = 1 << 20


def _blank_run(handle: Any, peek: Any, line: bytes, room: int) -> bytes:
    """``line`` (blank) and the whole blank lines the stream holds in its buffer after it, read
    in a few calls (up to ``_BLANK_RUN`` bytes, never more than ``room``)."""
    parts = [line]
    size = len(line)
    while size < _BLANK_RUN:
        try:
            ahead = peek(1)[: min(room, _BLANK_RUN - size)]
        except (OSError, EOFError, gzip.BadGzipFile):  # the next readline reports it
            break
        blank = len(ahead) - len(ahead.lstrip())
        cut = ahead.rfind(b"\n", 0, blank) + 1  # whole lines only
        if cut == 0:
            break
        piece = handle.read(cut)
        if not piece:
            break
        parts.append(piece)
        size += len(piece)
        room -= len(piece)
    return b"".join(parts) if len(parts) > 1 else line


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
    from .limits import current_limits

    cap = current_limits().max_file_bytes
    try:
        raw = read_capped(stdin_stream(), cap)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise PackageError(f"cannot read: {exc}", source="<stdin>") from None
    if len(raw) > cap:
        raise stdin_too_large(cap)
    return decode_utf8(raw, source="<stdin>")


def stdin_too_large(cap: int) -> PackageError:
    """The error of a standard input read whole that holds more than ``cap`` bytes."""
    return PackageError(f"larger than the limit of {cap} bytes (after decompression); raise it with "
                        "MEMAUDIT_MAX_FILE_BYTES if genuine", source="<stdin>")
