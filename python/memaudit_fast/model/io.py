"""Reading and writing one package, in either layout.

This module sits above :mod:`.package` (the single-file model) and :mod:`.artifact` (the
artifact directory layout), so that neither of them needs the other's reader.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import PackageError, UsageError
from .artifact import read_artifact_dir, write_artifact_dir
from .jsonio import check_output_path, dumps, loads_strict, read_text, write_atomic
from .package import Package


def load_package(path: str | Path) -> Package:
    """Read one package: a single-file ``.json`` (or ``.json.gz``) or an artifact directory."""
    p = Path(path)
    if p.is_dir():
        return read_artifact_dir(p)
    if not p.exists():
        raise PackageError("file not found; expected a package .json file or an artifact directory", source=str(p))
    text = read_text(p)
    data = loads_strict(text, source=str(p))
    return Package.from_dict(data, source=str(p))


def save_package(
    package: Package, path: str | Path, *, layout: str | None = None, overwrite: bool = False
) -> Path:
    """Write a package as single-file JSON (``layout='json'``) or an artifact directory.

    The layout defaults to ``json`` for paths ending in ``.json`` and ``artifact`` otherwise.
    An existing file is never replaced unless ``overwrite``; the package's own source never.
    """
    dst = Path(path)
    layout = layout or ("json" if dst.name.endswith(".json") else "artifact")
    inputs = (Path(package.source),) if package.source else ()
    if layout == "json":
        check_output_path(dst, inputs=inputs, overwrite=overwrite)
        text = dumps(package.data)
        write_atomic(dst, lambda handle: handle.write(text + "\n"))
        return dst
    if layout == "artifact":
        check_output_path(dst, inputs=inputs, overwrite=False)
        if dst.exists():
            raise UsageError(f"{dst} already exists; an artifact package is written to a new directory")
        write_artifact_dir(package, dst)
        return dst
    raise UsageError(f"unknown layout {layout!r}; expected 'json' or 'artifact'")
