"""Package sets: a ``.jsonl`` file (optionally ``.jsonl.gz``) with one package per line, or a
directory of ``.json`` / ``.json.gz`` packages, ``.jsonl`` sets and artifact directories (read
in sorted name order, not recursive; every other entry is reported as not read).

Sets are streamed: one package in memory at a time. :func:`iter_set_entries` yields a
:class:`SetEntry` per package whose ``error`` holds the PackageError of a malformed member,
so batch work can record it and go on; :func:`iter_packages` raises instead.
"""

from __future__ import annotations

import gzip
import os
import stat
import sys
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import IO, Any

from ..errors import PackageError, UsageError
from .artifact import REQUIRED_FILES, is_artifact_dir
from .io import load_package, printable
from .jsonio import OutputPath, dumps, path_label
from .limits import current_limits
from .lines import gunzip_as_it_arrives, iter_lines, iter_stream_lines
from .package import Package, package_from_json


@dataclass
class SetEntry:
    """One member of a package set: where it is, and the package or why it failed."""

    label: str  # "set.jsonl line 3" or a path
    package: Package | None
    error: PackageError | None


def is_jsonl(path: Path) -> bool:
    return path.name.endswith(".jsonl") or path.name.endswith(".jsonl.gz")


def is_package_file(path: Path) -> bool:
    return path.name.endswith(".json") or path.name.endswith(".json.gz")


# A raw member is (label, kind, payload): kind "text" carries one JSONL line (its UTF-8 bytes,
# checked to be UTF-8, as read: workers decode it without a round trip through str), "path" a package
# file or artifact directory, "error" why a member could not be read (an entry of a directory
# that is not read is such a member, so it is reported, never skipped). Nothing is parsed, so
# batch work can hand members to workers as they are. Kind "span" (only when asked for) is a
# line of a plain JSONL file given by where it is, (path, offset, length), for a worker on the
# same machine to read itself (:func:`resolve_member`): a few bytes to send instead of the line.
RawMember = tuple[str, str, Any]  # payload: str | bytes, or (path, offset, length) for a span


def _jsonl_members(path: Path, spans: bool = False) -> Iterator[RawMember]:
    limits = current_limits()
    label = path_label(path)
    spans = spans and not path.name.endswith(".gz")  # offsets into the file itself
    absolute = os.path.abspath(path)  # a worker may run in another directory
    offset = 0
    try:
        lines = iter_lines(path, line_cap=limits.max_file_bytes, stream_cap=limits.max_set_bytes)
        for number, line in lines:
            where = f"{label} line {number}"
            if isinstance(line, PackageError):
                spans = False  # the skipped rest of a long line moved the offsets
                yield (where, "error", line.detail)
                continue
            start, offset = offset, offset + len(line)
            if not line.strip():
                continue
            if spans:
                yield (where, "span", (absolute, start, len(line)))
                continue
            yield _line_member(where, line)
    except PackageError as exc:
        yield (label, "error", exc.detail)


#: The set name that stands for standard input (a JSONL set piped in), where a caller asks.
STDIN = "-"


def _stdin_members(source: IO[bytes] | None = None) -> Iterator[RawMember]:
    """The lines of standard input (or of ``source``, a stream read in its place) as members,
    read as they come (a JSONL set piped in, plain or gzip: ``cat set.jsonl.gz | ...`` is
    decompressed, as a .jsonl.gz file would be)."""
    limits = current_limits()
    stream: IO[bytes] = sys.stdin.buffer if source is None else source
    peek = getattr(stream, "peek", None)
    if peek is not None and peek(2)[:2] == b"\x1f\x8b":  # gzip's magic number
        stream = gunzip_as_it_arrives(stream)
    yield from line_members(iter_stream_lines(stream, "<stdin>", line_cap=limits.max_file_bytes,
                                              stream_cap=limits.max_set_bytes), "<stdin>")


def line_members(lines: Iterable[tuple[int, bytes | PackageError]], source: str) -> Iterator[RawMember]:
    """The members of the lines of a JSONL stream named ``source`` (as
    :func:`.lines.iter_stream_lines` gives them); blank lines are none."""
    for number, line in lines:
        where = f"{source} line {number}"
        if isinstance(line, PackageError):
            yield (where, "error", line.detail)
        elif line.strip():
            yield _line_member(where, line)


def _line_member(where: str, line: bytes) -> RawMember:
    """A JSONL line as a member: its text, or the error of a line that is not UTF-8."""
    if not line.isascii():  # ASCII is UTF-8: only other lines need the check
        try:
            line.decode("utf-8")
        except UnicodeDecodeError as exc:
            return (where, "error", (f"column {exc.start + 1}: not UTF-8 text (byte 0x{line[exc.start]:02x}); "
                                     "the other lines are still read"))
    return (where, "text", line)


def resolve_member(member: RawMember) -> RawMember:
    """A "span" member read from its file (the member its line would have been); any other
    member as it is. A file that changed under the batch gives an error member saying so."""
    where, kind, payload = member
    if kind != "span":
        return member
    path, offset, length = payload
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        try:
            line = os.pread(fd, length, offset) if stat.S_ISREG(os.fstat(fd).st_mode) else b""
        finally:
            os.close(fd)
    except OSError as exc:
        return (where, "error", f"cannot read the line again: {exc.strerror}")
    if len(line) != length or not line.strip():
        return (where, "error", ("the file changed while the batch was reading it; run the batch again on "
                                 "a file that stays as it is"))
    return _line_member(where, line)


def _directory_members(directory: Path, skip: Collection[tuple[int, int]] = ()) -> Iterator[RawMember]:
    """The members of a directory set; every entry not read is an error member saying why.
    Files in ``skip`` (device, inode) are passed over: a batch's own results file may sit in
    the directory it reads."""
    try:
        entries = sorted(directory.iterdir(), key=lambda p: os.fsencode(p.name))
    except OSError as exc:
        yield (path_label(directory), "error", f"cannot list the directory: {exc.strerror}")
        return
    for entry in entries:
        label = path_label(entry)
        try:
            if entry.is_symlink():
                yield (label, "error", ("not read: a symbolic link (set members are regular files and "
                                        "directories; links are not followed)"))
            elif entry.is_dir():
                if is_artifact_dir(entry):
                    yield (label, "path", str(entry))
                elif any((entry / name).exists() for name in REQUIRED_FILES):
                    yield (label, "path", str(entry))  # a broken artifact directory: its reader says why
                else:
                    yield (label, "error", ("not read: a subdirectory that is not an artifact package "
                                            "directory (sets are not recursive)"))
            elif not entry.is_file():
                yield (label, "error", "not read: not a regular file")
            elif skip and _file_id(entry) in skip:
                continue
            elif is_jsonl(entry):
                yield from _jsonl_members(entry)
            elif is_package_file(entry):
                yield (label, "path", str(entry))
            else:
                yield (label, "error", ("not read: a set directory holds .json / .json.gz packages, "
                                        ".jsonl / .jsonl.gz sets and artifact directories (names are "
                                        "case-sensitive)"))
        except OSError as exc:
            yield (label, "error", f"cannot read: {exc.strerror}")


def _file_id(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_dev, st.st_ino


def iter_raw_members(paths: str | Path | Iterable[str | Path], *, spans: bool = False,
                     skip: Collection[tuple[int, int]] = (), stdin: bool | IO[bytes] = False) -> Iterator[RawMember]:
    """Stream the members of package sets, files or directories, in order, unparsed.

    ``spans``: lines of plain JSONL files come as "span" members, for workers on this machine
    to read with :func:`resolve_member` (directories' sets are read as usual). ``skip``: files
    (device, inode) of set directories that are not members (a batch's output). ``stdin``:
    the name ``-`` is standard input, read as a JSONL set (a binary stream given here is read
    in its place)."""
    if isinstance(paths, (str, PathLike)):  # one path, not the characters of its name
        paths = [paths]
    for raw in paths:
        if stdin and str(raw) == STDIN:
            yield from _stdin_members(None if stdin is True else stdin)
            continue
        path = Path(raw)
        if is_jsonl(path):
            yield from _jsonl_members(path, spans)
        elif path.is_dir() and not is_artifact_dir(path) \
                and not any((path / name).exists() for name in REQUIRED_FILES):
            yield from _directory_members(path, skip)
        elif not path.exists() and not path.is_symlink():
            yield (path_label(path), "error", "file not found; expected a package, a .jsonl set or a directory")
        else:
            yield (path_label(path), "path", str(path))


def parse_member(member: RawMember) -> Package:
    """The validated package of a raw member (PackageError when it is malformed)."""
    label, kind, payload = resolve_member(member)
    if kind == "error":
        raise PackageError(str(payload), source=label)
    if kind == "text":
        return package_from_json(payload, source=label, record="")
    try:
        return load_package(str(payload))
    except PackageError as exc:
        shown = printable(payload)
        if shown == label:
            raise
        raise _relabelled(exc, shown, label) from None


def _relabelled(exc: PackageError, old: str, new: str) -> PackageError:
    """``exc`` (and every defect it lists) with the source ``old`` shown as ``new``: a name that
    holds a control character (a newline) keeps the message on one line."""
    errors = [PackageError(e.detail, package_id=e.package_id, record=e.record, field=e.field,
                           source=new if e.source == old else e.source) for e in exc.errors]
    first = errors[0]
    first.errors = errors
    first.truncated = exc.truncated
    return first


def iter_set_entries(paths: str | Path | Iterable[str | Path]) -> Iterator[SetEntry]:
    """Every package of every given set, file or directory, in order."""
    for member in iter_raw_members(paths):
        try:
            yield SetEntry(member[0], parse_member(member), None)
        except PackageError as exc:
            yield SetEntry(member[0], None, exc)


def iter_packages(paths: str | Path | Iterable[str | Path]) -> Iterator[Package]:
    """Every package of the given sets; the first malformed one raises its PackageError."""
    for entry in iter_set_entries(paths):
        if entry.error is not None:
            raise entry.error
        assert entry.package is not None
        yield entry.package


def write_package_set(packages: Iterable[Package | dict], path: str | Path, *, overwrite: bool = False) -> int:
    """Write packages as one JSONL set (gzip when the name ends in .gz); returns the count."""
    # One package (or a path) iterates as its keys or characters: it would write a set of junk.
    if isinstance(packages, (Package, dict)):
        raise UsageError("write_package_set takes an iterable of packages (dicts or Package), got one "
                         "package; pass a list, e.g. [package]")
    if isinstance(packages, (str, bytes, PathLike)):
        raise UsageError(f"write_package_set takes an iterable of packages, got a {type(packages).__name__}; "
                         "read the packages first (iter_packages, load_package) and pass a list of them")
    dst = Path(path)
    out = OutputPath(dst, force=overwrite).check()
    count = 0

    def write(handle: IO[bytes]) -> None:
        nonlocal count
        sink: IO[bytes] | gzip.GzipFile = gzip.GzipFile(fileobj=handle, mode="wb", mtime=0) if dst.name.endswith(".gz") else handle
        for index, pkg in enumerate(packages):
            if not isinstance(pkg, (Package, dict)):
                raise UsageError(f"packages[{index}]: expected a package (a dict or a Package), got "
                                 f"{type(pkg).__name__}")
            data = pkg.data if isinstance(pkg, Package) else pkg
            sink.write((dumps(data, indent=None) + "\n").encode("utf-8"))
            count += 1
        if sink is not handle:
            sink.close()

    out.write(write, binary=True)
    return count
