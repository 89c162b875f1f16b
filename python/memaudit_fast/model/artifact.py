"""The artifact directory layout of the MEMAUDIT paper's public code.

A package directory holds seven files (field names as the artifact's
``oraclemem/coverage_export.py`` writes them)::

    experiences.jsonl            experience_id, session_id, timestamp, text, ...
    evidence_units.jsonl         unit_id, kind, canonical_text, unit_weight, state, ...
    queries.jsonl                query_id, question, answer, category, required_unit_ids, ...
    candidate_memories.jsonl     candidate_id, experience_id, candidate_group,
                                 representation_type, text, cost | cost_tokens, ...
    coverage_matrix.jsonl        candidate_id, unit_id, coverage, coverage_label, rationale, ...
    annotation_decisions.jsonl   free-form review records
    candidate_generation_manifest.json

Reading maps it onto the single-file model by renaming the artifact's field names to the
native ones (``canonical_text`` -> ``text``, ``unit_weight`` -> ``weight``, ``question`` ->
``text``, ``candidate_group`` -> ``group``, ``representation_type`` -> ``representation``)
when the native name is not already present, and folding coverage rows into each candidate's
``coverage`` (their other fields go to ``coverage_annotations``). Everything else is kept:
annotation decisions, the manifest and any other top-level file go under
``meta["artifact"]``. Writing reverses each step, so artifact -> package -> artifact gives
the same records (coverage rows come out grouped by candidate). Native keys with no place in
the artifact (budgets, objective, ...) travel in the manifest under ``"memaudit"``.

Paths are never taken from file contents: ``meta["artifact"]`` can only add extra files with
plain names (never one of the seven, never a hidden or nested name), and a wrong type there is
bad input reported before anything is written. Symbolic links inside the directory are refused;
only regular files are read, each within ``MEMAUDIT_MAX_FILE_BYTES``.

The manifest may list SHA-256 digests of the files, as ``"sha256": {name: hex}`` or as
``"files"`` entries (``{name: {"sha256": hex}}`` or ``[{"path" | "name": ..., "sha256": hex}]``).
Every listed digest is checked; a mismatch is an error naming the file unless the caller
accepts it (``accept_checksum_mismatch``, ``--accept-checksum-mismatch`` or
``MEMAUDIT_ACCEPT_CHECKSUM_MISMATCH=1``), and then the mismatching names are kept under
``meta["artifact"]["checksum_mismatch"]``. Writing records the digests of the files written.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from ..errors import PackageError
from .jsonio import (
    MAX_EXACT_INT,
    decode_utf8,
    describe,
    dumps,
    is_number,
    loads_strict,
    read_bytes,
    write_atomic,
)
from .package import FORMAT, Package, locate_sources

REQUIRED_FILES = (
    "experiences.jsonl",
    "evidence_units.jsonl",
    "queries.jsonl",
    "candidate_memories.jsonl",
    "coverage_matrix.jsonl",
    "annotation_decisions.jsonl",
    "candidate_generation_manifest.json",
)
MANIFEST = "candidate_generation_manifest.json"
# Extra top-level files are kept as text up to this size each.
MAX_EXTRA_FILE_BYTES = 16 * 1024 * 1024

# (native name, artifact name) per record list.
RENAMES: dict[str, tuple[tuple[str, str], ...]] = {
    "units": (("text", "canonical_text"), ("weight", "unit_weight")),
    "queries": (("text", "question"),),
    "candidates": (("group", "candidate_group"), ("representation", "representation_type")),
    "experiences": (),
}
LIST_FILES = {
    "experiences": "experiences.jsonl",
    "units": "evidence_units.jsonl",
    "queries": "queries.jsonl",
    "candidates": "candidate_memories.jsonl",
}
# Keys of a coverage row that are stored elsewhere in the native model.
COVERAGE_CORE = ("candidate_id", "unit_id", "coverage")


def is_artifact_dir(path: Path) -> bool:
    return path.is_dir() and (path / "candidate_memories.jsonl").exists()


def _safe_file(directory: Path, name: str) -> Path:
    path = directory / name
    if path.is_symlink():
        raise PackageError(
            "is a symbolic link; artifact files must be regular files inside the directory",
            source=str(path),
        )
    return path


def _read_jsonl(path: Path, raw: bytes) -> tuple[list[dict[str, Any]], list[int]]:
    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    for number, chunk in enumerate(raw.split(b"\n"), start=1):
        if not chunk.strip():
            continue
        line = decode_utf8(chunk, source=str(path), record=f"line {number}")
        row = loads_strict(line, source=str(path), record=f"line {number}")
        if not isinstance(row, dict):
            raise PackageError(
                f"found {describe(row)}, expected one JSON object per line",
                source=str(path), record=f"line {number}",
            )
        rows.append(row)
        lines.append(number)
    return rows, lines


def _rename(row: dict[str, Any], pairs: tuple[tuple[str, str], ...], *, to_native: bool) -> dict[str, Any]:
    out = dict(row)
    for native, art in pairs:
        src, dst = (art, native) if to_native else (native, art)
        if src in out and dst not in out:
            # Rebuild to keep the key's position, so written files read like the originals.
            out = {(dst if k == src else k): v for k, v in out.items()}
    return out


def _listed_digests(manifest: dict[str, Any], source: str) -> dict[str, str]:
    """{file name: sha256 hex} as the manifest lists them (empty when it lists none)."""
    out: dict[str, str] = {}

    def add(name: Any, digest: Any, where: str) -> None:
        if not isinstance(name, str) or not isinstance(digest, str):
            raise PackageError(f"found {describe(name)} -> {describe(digest)}, expected a file name and "
                               "its sha256 as hex text", source=source, field=where)
        if "/" in name or "\\" in name or name in ("", ".", ".."):
            raise PackageError(f"names {name!r}, which is not a file of this directory", source=source,
                               field=where)
        out[name] = digest.lower()

    sha = manifest.get("sha256")
    if isinstance(sha, dict):
        for name, digest in sha.items():
            add(name, digest, f"sha256.{name}")
    files = manifest.get("files")
    if isinstance(files, dict):
        for name, entry in files.items():
            if isinstance(entry, dict) and "sha256" in entry:
                add(name, entry["sha256"], f"files.{name}.sha256")
    elif isinstance(files, list):
        for k, entry in enumerate(files):
            if isinstance(entry, dict) and "sha256" in entry:
                add(entry.get("path", entry.get("name")), entry["sha256"], f"files[{k}].sha256")
    return out


def _accept_mismatch(flag: bool | None) -> bool:
    if flag is not None:
        return flag
    return os.environ.get("MEMAUDIT_ACCEPT_CHECKSUM_MISMATCH", "") not in ("", "0")


def read_artifact_dir(directory: Path, *, accept_checksum_mismatch: bool | None = None) -> Package:
    """Read and fully validate an artifact directory (and the digests its manifest lists)."""
    directory = Path(directory)
    for name in REQUIRED_FILES:
        path = _safe_file(directory, name)
        if not path.is_file():
            raise PackageError(
                f"missing {name}; an artifact package directory holds {', '.join(REQUIRED_FILES)}",
                source=str(directory),
            )
    raw_files = {name: read_bytes(directory / name) for name in REQUIRED_FILES}
    manifest_source = str(directory / MANIFEST)
    manifest = loads_strict(decode_utf8(raw_files[MANIFEST], source=manifest_source), source=manifest_source)
    if not isinstance(manifest, dict):
        raise PackageError(f"found {describe(manifest)}, expected a JSON object", source=manifest_source)
    mismatched = _check_digests(directory, manifest, raw_files, manifest_source,
                                accept=_accept_mismatch(accept_checksum_mismatch))

    lists: dict[str, list[dict[str, Any]]] = {}
    line_of: dict[str, list[int]] = {}
    for key, name in LIST_FILES.items():
        rows, lines = _read_jsonl(directory / name, raw_files[name])
        lists[key] = [_rename(r, RENAMES[key], to_native=True) for r in rows]
        line_of[key] = lines
    coverage_rows, coverage_lines = _read_jsonl(directory / "coverage_matrix.jsonl",
                                                raw_files["coverage_matrix.jsonl"])
    decisions, _ = _read_jsonl(directory / "annotation_decisions.jsonl", raw_files["annotation_decisions.jsonl"])
    unit_ids = {u.get("unit_id") for u in lists["units"] if isinstance(u.get("unit_id"), str)}

    stored_raw = manifest.get("memaudit")
    stored: dict[str, Any] = stored_raw if isinstance(stored_raw, dict) else {}
    native_top = dict(stored.get("top", {}))
    package_id = native_top.pop("package_id", None) or manifest.get("instance_id") or directory.name
    if not isinstance(package_id, str) or not package_id:
        package_id = directory.name

    cost_from_tokens: list[str] = []
    by_id: dict[str, dict[str, Any]] = {}
    for cand in lists["candidates"]:
        if "cost" not in cand and "cost_tokens" in cand:
            cand["cost"] = cand["cost_tokens"]
            if isinstance(cand.get("candidate_id"), str):
                cost_from_tokens.append(cand["candidate_id"])
        if isinstance(cand.get("candidate_id"), str):
            by_id.setdefault(cand["candidate_id"], cand)
        cand.setdefault("coverage", {})

    cov_source = str(directory / "coverage_matrix.jsonl")
    for row, number in zip(coverage_rows, coverage_lines):
        where = f"line {number}"
        for key in COVERAGE_CORE:
            if key not in row:
                raise PackageError("missing", source=cov_source, record=where, field=key)
        owner = by_id.get(row["candidate_id"]) if isinstance(row["candidate_id"], str) else None
        if owner is None:
            raise PackageError(
                f"refers to candidate {describe(row['candidate_id'])}, which is not in candidate_memories.jsonl",
                source=cov_source, record=where, field="candidate_id",
            )
        unit_id = row["unit_id"]
        if not isinstance(unit_id, str):
            raise PackageError(f"found {describe(unit_id)}, expected a unit id string",
                               source=cov_source, record=where, field="unit_id")
        if unit_id not in unit_ids:
            raise PackageError(f"refers to unit {unit_id!r}, which is not in evidence_units.jsonl",
                               source=cov_source, record=where, field="unit_id")
        value = row["coverage"]
        if not is_number(value) or not (0 <= value < float("inf")) or \
                (isinstance(value, int) and value > MAX_EXACT_INT):
            raise PackageError(f"found {describe(value)}, expected a finite number >= 0",
                               source=cov_source, record=where, field="coverage")
        if unit_id in owner["coverage"]:
            raise PackageError(
                f"a second cell for candidate {row['candidate_id']!r} and unit {unit_id!r}; "
                "each (candidate, unit) pair may appear once",
                source=cov_source, record=where, field="unit_id",
            )
        owner["coverage"][unit_id] = row["coverage"]
        extras = {k: v for k, v in row.items() if k not in COVERAGE_CORE}
        if extras:
            owner.setdefault("coverage_annotations", {})[unit_id] = extras

    extra_files: dict[str, str] = {}
    skipped: list[str] = []
    for entry in sorted(directory.iterdir()):
        if entry.name in REQUIRED_FILES:
            continue
        try:
            if entry.is_symlink() or not entry.is_file() or entry.stat().st_size > MAX_EXTRA_FILE_BYTES:
                raise PackageError("not a small regular file")
            extra_files[entry.name] = read_bytes(entry, cap=MAX_EXTRA_FILE_BYTES).decode("utf-8")
        except (PackageError, UnicodeDecodeError, OSError):
            skipped.append(os.fsencode(entry.name).decode("utf-8", "backslashreplace"))

    manifest_kept = {k: v for k, v in manifest.items() if k != "memaudit"}
    meta = _copy(native_top.pop("meta", {})) if isinstance(native_top.get("meta"), dict) else {}
    meta["artifact"] = {
        "manifest": manifest_kept,
        "annotation_decisions": decisions,
        "extra_files": extra_files,
        "cost_from_cost_tokens": cost_from_tokens,
        "absent_lists": stored.get("absent_lists", []),
    }
    if skipped:
        meta["artifact"]["not_read"] = skipped
    if mismatched:
        meta["artifact"]["checksum_mismatch"] = mismatched

    data: dict[str, Any] = {"format": FORMAT, "package_id": package_id}
    data.update(native_top)
    for key in ("experiences", "units", "candidates", "queries"):
        if key in stored.get("absent_lists", []) and not lists[key]:
            continue
        data[key] = lists[key]
    data["meta"] = meta

    def by_line(key: str) -> Callable[[int], str]:
        return lambda i: f"{LIST_FILES[key]} line {line_of[key][i]}" if i < len(line_of[key]) else f"{key}[{i}]"

    locator = locate_sources({key: by_line(key) for key in LIST_FILES})
    return Package.from_dict(data, source=str(directory), locator=locator)


def _copy(value: Any) -> Any:
    """A deep copy of JSON data (msgspec: C speed, no recursion trouble within the depth cap)."""
    return msgspec.json.decode(msgspec.json.encode(value))


def _check_digests(directory: Path, manifest: dict[str, Any], raw_files: dict[str, bytes], source: str,
                   *, accept: bool) -> list[str]:
    mismatched = []
    for name, expected in _listed_digests(manifest, source).items():
        if name == MANIFEST:
            continue  # a manifest cannot hold its own digest
        raw = raw_files.get(name)
        if raw is None:
            path = directory / name
            if path.is_symlink() or not path.is_file():
                raise PackageError(f"the manifest lists a sha256 for {name!r}, which is not a regular file "
                                   "of the directory", source=source)
            raw = read_bytes(path)
        found = hashlib.sha256(raw).hexdigest()
        if found != expected:
            if not accept:
                raise PackageError(
                    f"sha256 {found} does not match the manifest's {cut_digest(expected)}; the file changed "
                    "since the manifest was written (pass --accept-checksum-mismatch to read it anyway)",
                    source=str(directory / name),
                )
            mismatched.append(name)
    return mismatched


def cut_digest(text: str) -> str:
    return text if len(text) <= 64 else text[:64] + "..."


def _artifact_meta(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(meta without "artifact", the checked "artifact" block): wrong types are bad input."""
    meta = data.get("meta", {}) if isinstance(data.get("meta"), dict) else {}
    art = meta.pop("artifact", {})
    where = "meta.artifact"

    def bad(fld: str, found: Any, expected: str) -> PackageError:
        return PackageError(f"found {describe(found)}, expected {expected}", package_id=str(data.get("package_id")),
                            field=f"{where}.{fld}" if fld else where)

    if not isinstance(art, dict):
        raise bad("", art, "an object (written by the artifact reader)")
    kinds = {"manifest": dict, "annotation_decisions": list, "extra_files": dict,
             "cost_from_cost_tokens": list, "absent_lists": list}
    for key, kind in kinds.items():
        if key in art and not isinstance(art[key], kind):
            raise bad(key, art[key], "an object" if kind is dict else "a list")
    for k, row in enumerate(art.get("annotation_decisions", [])):
        if not isinstance(row, dict):
            raise bad(f"annotation_decisions[{k}]", row, "an object")
    for name, text in art.get("extra_files", {}).items():
        if not isinstance(text, str):
            raise bad(f"extra_files.{name}", text, "the file's text")
        if name in REQUIRED_FILES or name.startswith(".") or "/" in name or "\\" in name or "\x00" in name \
                or name in ("", "..") or len(name.encode("utf-8", "surrogatepass")) > 255:
            raise PackageError(
                f"names the file {name!r}, which an artifact directory cannot take as an extra file "
                f"(never one of its seven files, a hidden, nested or empty name)",
                package_id=str(data.get("package_id")), field=f"{where}.extra_files",
            )
    return meta, art


def artifact_records(package: Package) -> dict[str, Any]:
    """The artifact files' contents for a package (inverse of :func:`read_artifact_dir`).

    Raises PackageError when ``meta["artifact"]`` is malformed, before anything is written.
    """
    data = _copy(package.data)
    meta, art = _artifact_meta(data)
    from_tokens = {c for c in art.get("cost_from_cost_tokens", []) if isinstance(c, str)}

    coverage_rows: list[dict[str, Any]] = []
    candidates = []
    for cand in data.get("candidates", []):
        coverage = cand.pop("coverage", {})
        notes = cand.pop("coverage_annotations", {})
        for unit_id, value in coverage.items():
            row: dict[str, Any] = {"candidate_id": cand["candidate_id"], "unit_id": unit_id, "coverage": value}
            row.update(notes.get(unit_id, {}))
            coverage_rows.append(row)
        if cand.get("candidate_id") in from_tokens:
            cand.pop("cost", None)
        candidates.append(_rename(cand, RENAMES["candidates"], to_native=False))

    top = {
        k: v for k, v in data.items()
        if k not in ("format", "experiences", "units", "candidates", "queries", "meta")
    }
    if meta:
        top["meta"] = meta
    manifest = dict(art.get("manifest", {}))
    absent = [k for k in ("experiences", "queries") if k not in data]
    manifest.pop("memaudit", None)
    manifest_top = {k: v for k, v in top.items() if k != "package_id" or manifest.get("instance_id") != v}
    if manifest_top or absent:
        manifest["memaudit"] = {"top": manifest_top, "absent_lists": absent}
    return {
        "experiences.jsonl": [_rename(r, (), to_native=False) for r in data.get("experiences", [])],
        "evidence_units.jsonl": [_rename(r, RENAMES["units"], to_native=False) for r in data.get("units", [])],
        "queries.jsonl": [_rename(r, RENAMES["queries"], to_native=False) for r in data.get("queries", [])],
        "candidate_memories.jsonl": candidates,
        "coverage_matrix.jsonl": coverage_rows,
        "annotation_decisions.jsonl": list(art.get("annotation_decisions", [])),
        MANIFEST: manifest,
        "extra_files": dict(art.get("extra_files", {})),
    }


def _text_writer(text: str) -> Callable[[Any], None]:
    """A writer for :func:`write_atomic` bound to this ``text`` (not to a loop variable)."""
    return lambda handle: handle.write(text)


def _file_texts(records: dict[str, Any]) -> dict[str, str]:
    texts: dict[str, str] = {}
    for name, rows in records.items():
        if name in ("extra_files", MANIFEST):
            continue
        texts[name] = "".join(dumps(r, indent=None) + "\n" for r in rows)
    texts.update(records["extra_files"])
    manifest = dict(records[MANIFEST])
    listed = _listed_digests(manifest, MANIFEST)
    if listed:  # the files are written anew: record their digests, not the old ones
        digests = {name: hashlib.sha256(text.encode("utf-8")).hexdigest() for name, text in texts.items()}
        manifest = _with_digests(manifest, digests)
    texts[MANIFEST] = dumps(manifest, indent=2) + "\n"
    return texts


def _with_digests(manifest: dict[str, Any], digests: dict[str, str]) -> dict[str, Any]:
    out = _copy(manifest)
    if isinstance(out.get("sha256"), dict):
        out["sha256"] = {name: digests.get(name, old) for name, old in out["sha256"].items()}
    files = out.get("files")
    if isinstance(files, dict):
        for name, entry in files.items():
            if isinstance(entry, dict) and "sha256" in entry and name in digests:
                entry["sha256"] = digests[name]
    elif isinstance(files, list):
        for entry in files:
            name = entry.get("path", entry.get("name")) if isinstance(entry, dict) else None
            if isinstance(entry, dict) and "sha256" in entry and name in digests:
                entry["sha256"] = digests[name]
    return out


def write_artifact_files(records: dict[str, Any], directory: Path) -> None:
    """Write :func:`artifact_records` into an existing, empty directory."""
    for name, text in _file_texts(records).items():
        write_atomic(Path(directory) / name, _text_writer(text))


def write_artifact_dir(package: Package, directory: Path) -> None:
    """Write a package as an artifact directory (which must not exist yet), all or nothing."""
    from .jsonio import OutputPath

    records = artifact_records(package)
    with OutputPath(directory, kind="dir").directory() as tmp:
        write_artifact_files(records, tmp)
