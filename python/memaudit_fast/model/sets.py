"""Package sets: a ``.jsonl`` file (optionally ``.jsonl.gz``) with one package per line, or a
directory of ``.json`` packages and artifact directories (read in sorted name order).

Sets are streamed: one package in memory at a time. :func:`iter_set_entries` yields a
:class:`SetEntry` per package whose ``error`` holds the PackageError of a malformed member,
so batch work can record it and go on; :func:`iter_packages` raises instead.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import IO

from ..errors import PackageError
from .artifact import is_artifact_dir
from .io import load_package
from .jsonio import check_output_path, dumps, loads_strict, write_atomic
from .package import Package


@dataclass
class SetEntry:
    """One member of a package set: where it is, and the package or why it failed."""

    label: str  # "set.jsonl line 3" or a path
    package: Package | None
    error: PackageError | None


def is_jsonl(path: Path) -> bool:
    return path.name.endswith(".jsonl") or path.name.endswith(".jsonl.gz")


def _open_text(path: Path) -> IO[str]:
    if path.name.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return path.open("r", encoding="utf-8")


# A raw member is (label, kind, payload): kind "text" carries one JSONL line, "path" a package
# file or artifact directory, "error" why a member could not be read. Nothing is parsed, so
# batch work can hand members to workers as they are.
RawMember = tuple[str, str, str]


def _jsonl_members(path: Path) -> Iterator[RawMember]:
    try:
        handle = _open_text(path)
    except OSError as exc:
        yield (str(path), "error", f"cannot read: {exc}")
        return
    with handle:
        number = 0
        while True:
            try:
                line = handle.readline()
            except (OSError, EOFError, UnicodeDecodeError) as exc:
                yield (f"{path} line {number + 1}", "error", f"cannot read further: {exc}")
                return
            if not line:
                return
            number += 1
            if line.strip():
                yield (f"{path} line {number}", "text", line)


def iter_raw_members(paths: str | Path | Iterable[str | Path]) -> Iterator[RawMember]:
    """Stream the members of package sets, files or directories, in order, unparsed."""
    if isinstance(paths, (str, PathLike)):  # one path, not the characters of its name
        paths = [paths]
    for raw in paths:
        path = Path(raw)
        if is_jsonl(path):
            yield from _jsonl_members(path)
        elif path.is_dir() and not is_artifact_dir(path):
            members = sorted(
                p for p in path.iterdir()
                if not p.is_symlink()
                and ((p.is_file() and (p.name.endswith(".json") or is_jsonl(p))) or is_artifact_dir(p))
            )
            yield from iter_raw_members(members)
        elif not path.exists():
            yield (str(path), "error", "file not found; expected a package, a .jsonl set or a directory")
        else:
            yield (str(path), "path", str(path))


def parse_member(member: RawMember) -> Package:
    """The validated package of a raw member (PackageError when it is malformed)."""
    label, kind, payload = member
    if kind == "error":
        raise PackageError(payload, source=label)
    if kind == "text":
        return Package.from_dict(loads_strict(payload, source=label, record=""), source=label)
    return load_package(payload)


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
    dst = Path(path)
    check_output_path(dst, overwrite=overwrite)
    count = 0

    def write(handle: IO[bytes]) -> None:
        nonlocal count
        sink: IO[bytes] | gzip.GzipFile = gzip.GzipFile(fileobj=handle, mode="wb", mtime=0) if dst.name.endswith(".gz") else handle
        for pkg in packages:
            data = pkg.data if isinstance(pkg, Package) else pkg
            sink.write((dumps(data, indent=None) + "\n").encode("utf-8"))
            count += 1
        if sink is not handle:
            sink.close()

    write_atomic(dst, write, binary=True)
    return count
