"""Reading and writing one package, in either layout.

This module sits above :mod:`.package` (the single-file model) and :mod:`.artifact` (the
artifact directory layout), so that neither of them needs the other's reader.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import PackageError, UsageError
from .artifact import artifact_records, read_artifact_dir, write_artifact_files
from .jsonio import OutputPath, dumps, read_bytes
from .package import Package, package_from_json


def printable(path: str | Path) -> str:
    """A path as text that can always be printed (undecodable bytes of a name as ``\\xNN``)."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def load_package(path: str | Path) -> Package:
    """Read one package: a single-file ``.json`` (or ``.json.gz``) or an artifact directory."""
    p = Path(path)
    label = printable(p)
    if p.is_dir():
        return read_artifact_dir(p)
    if not p.exists():
        raise PackageError("file not found; expected a package .json file or an artifact directory", source=label)
    try:
        raw = read_bytes(p)
    except PackageError as exc:
        raise PackageError(exc.detail, source=label, record=exc.record) from None
    return package_from_json(raw, source=label)


def save_package(
    package: Package, path: str | Path, *, layout: str | None = None, overwrite: bool = False
) -> Path:
    """Write a package as single-file JSON (``layout='json'``) or an artifact directory.

    The layout defaults to ``json`` for paths ending in ``.json`` and ``artifact`` otherwise.
    The output rules are :class:`~memaudit_fast.model.jsonio.OutputPath`'s: nothing existing is
    replaced unless ``overwrite``, the package's own source never, links are never followed,
    and the output appears complete or not at all. An existing directory is replaced (with
    ``overwrite``) only when it is an artifact package directory or empty.
    """
    dst = Path(path)
    layout = layout or ("json" if dst.name.endswith(".json") else "artifact")
    inputs = (Path(package.source),) if package.source else ()
    if layout == "json":
        out = OutputPath(dst, inputs=inputs, force=overwrite).check()
        text = dumps(package.data)
        out.write_text(text + "\n")
        return dst
    if layout == "artifact":
        out = OutputPath(dst, inputs=inputs, force=overwrite, kind="dir", marker="candidate_memories.jsonl").check()
        records = artifact_records(package)  # checks meta.artifact before anything is written
        with out.directory() as tmp:
            write_artifact_files(records, tmp)
        return dst
    raise UsageError(f"unknown layout {layout!r}; expected 'json' or 'artifact'")
