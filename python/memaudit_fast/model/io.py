"""Reading and writing one package, in either layout.

This module sits above :mod:`.package` (the single-file model) and :mod:`.artifact` (the
artifact directory layout), so that neither of them needs the other's reader.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import PackageError, UsageError
from .artifact import REQUIRED_FILES, artifact_records, read_artifact_dir, write_artifact_files
from .jsonio import OutputPath, dumps, read_bytes
from .lines import path_label
from .package import Package, package_from_json


def printable(path: str | Path) -> str:
    """A path as text that can always be printed on one line (undecodable bytes of a name as
    ``\\xNN``, control characters escaped): :func:`.lines.path_label`."""
    return path_label(path)


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
    try:
        return package_from_json(raw, source=label)
    except PackageError as exc:
        if exc.detail.startswith("not valid JSON (Extra data)"):
            raise _not_one_package(raw, label, p.name) or exc from None
        raise


def _not_one_package(raw: bytes, label: str, name: str) -> PackageError | None:
    """What a file of one JSON object a line is, where one package was expected: a package set
    or a results file, with the fix for each; None for anything else."""
    import orjson

    from .package import FORMAT
    from .spec import RESULT_FORMAT

    lines = [line for line in raw.split(b"\n") if line.strip()]
    try:
        first = orjson.loads(lines[0])
    except (orjson.JSONDecodeError, IndexError):
        return None
    kind = first.get("format") if isinstance(first, dict) else None
    if kind == RESULT_FORMAT:
        return PackageError(
            "holds memaudit.result/1 records (a results file), not a package; read results with "
            f"memaudit export {label} results.csv or memaudit report {label} --out report/", source=label)
    jsonl = name.endswith((".jsonl", ".jsonl.gz"))
    if kind != FORMAT:
        # Renaming a .jsonl file (the usual hint) would not help here.
        return PackageError(
            f"holds {len(lines)} JSON objects, one a line; this command takes one package (one JSON object "
            "in a .json file, or an artifact directory)", source=label) if jsonl else None
    # A set under a .jsonl name is read as a set by the commands that take sets.
    rename = "" if jsonl else "; to read it as a set, name it .jsonl"
    return PackageError(
        f"holds a package set ({len(lines)} packages, one a line); this command takes one package: give "
        f"one of them (e.g. sed -n 1p {label} > one.json), or use a command that reads sets "
        f"(batch, sweep, validate){rename}", source=label)


def save_package(
    package: Package, path: str | Path, *, layout: str | None = None, overwrite: bool = False
) -> Path:
    """Write a package as single-file JSON (``layout='json'``) or an artifact directory.

    The layout defaults to ``json`` for paths ending in ``.json`` and ``artifact`` otherwise.
    The output rules are :class:`~memaudit_fast.model.jsonio.OutputPath`'s: nothing existing is
    replaced unless ``overwrite``, the package's own source never, links are never followed,
    and the output appears complete or not at all. An existing directory is replaced (with
    ``overwrite``) only when it is empty or an artifact package directory that holds nothing
    but the files this package's artifact layout writes (the seven files and the package's own
    extra files); any other file in it is named and nothing is changed.
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
        records = artifact_records(package)  # checks meta.artifact before anything is written
        own = set(REQUIRED_FILES) | set(records["extra_files"])
        out = OutputPath(dst, inputs=inputs, force=overwrite, kind="dir", marker="candidate_memories.jsonl",
                         owns=lambda entry: entry.name in own and entry.is_file(),
                         what="the artifact layout", option="output directory (DST)").check()
        with out.directory() as tmp:
            write_artifact_files(records, tmp)
        return dst
    raise UsageError(f"unknown layout {layout!r}; expected 'json' or 'artifact'")
