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
from pathlib import Path
from typing import IO

from .artifact import is_artifact_dir
from .errors import PackageError
from .jsonio import check_output_path, dumps, loads_strict, write_atomic
from .package import Package, load_package


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


def _iter_jsonl(path: Path) -> Iterator[SetEntry]:
    try:
        handle = _open_text(path)
    except OSError as exc:
        raise PackageError(f"cannot read: {exc}", source=str(path)) from None
    with handle:
        number = 0
        while True:
            try:
                line = handle.readline()
            except (OSError, EOFError, UnicodeDecodeError) as exc:
                label = f"{path} line {number + 1}"
                yield SetEntry(label, None, PackageError(f"cannot read further: {exc}", source=label))
                return
            if not line:
                return
            number += 1
            if not line.strip():
                continue
            label = f"{path} line {number}"
            try:
                data = loads_strict(line, source=str(path), record=f"line {number}")
                yield SetEntry(label, Package.from_dict(data, source=label), None)
            except PackageError as exc:
                yield SetEntry(label, None, exc)


def iter_set_entries(paths: Iterable[str | Path]) -> Iterator[SetEntry]:
    """Every package of every given set, file or directory, in order."""
    for raw in paths:
        path = Path(raw)
        if is_jsonl(path):
            yield from _iter_jsonl(path)
        elif path.is_dir() and not is_artifact_dir(path):
            members = sorted(
                p for p in path.iterdir()
                if not p.is_symlink()
                and ((p.is_file() and (p.name.endswith(".json") or is_jsonl(p))) or is_artifact_dir(p))
            )
            yield from iter_set_entries(members)
        else:
            try:
                yield SetEntry(str(path), load_package(path), None)
            except PackageError as exc:
                yield SetEntry(str(path), None, exc)


def iter_packages(paths: Iterable[str | Path]) -> Iterator[Package]:
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
