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
when the native name is not already present, taking ``cost_tokens`` as the cost of a candidate
without ``cost``, and folding coverage rows into each candidate's ``coverage`` (their other
fields go to ``coverage_annotations``). Everything else is kept: annotation decisions, the
manifest and any other top-level file go under ``meta["artifact"]``. Writing reverses each step,
so artifact -> package -> artifact gives the same records (coverage rows come out grouped by
candidate). Native keys with no place in the artifact (budgets, objective, ...) travel in the
manifest under ``"memaudit"``, and so does an unknown record key the reader would map (a
``candidate_group`` on a candidate without ``group``): package -> artifact -> package gives the
same data and the same optimum. What the manifest holds is checked as strictly as the files.

Paths are never taken from file contents: ``meta["artifact"]`` can only add extra files with
plain names (never one of the seven, never a hidden or nested name), and a wrong type there is
bad input reported before anything is written. Symbolic links, subdirectories and other entries
that are not regular files are refused (see :mod:`.artifact_manifest`); only regular files are
read, each within ``MEMAUDIT_MAX_FILE_BYTES``; an extra file that is not UTF-8 text is kept as
base64 (``meta["artifact"]["extra_files_base64"]``) and written back byte for byte.

The manifest may list SHA-256 digests of the files, as ``"sha256": {name: hex}`` or as
``"files"`` entries (``{name: {"sha256": hex}}`` or ``[{"path" | "name": ..., "sha256": hex}]``).
A digest that is not 64 hex digits, or a ``sha256`` that is not an object, is bad input
naming the manifest, never a check skipped. Every listed digest is checked; a mismatch is an error naming the file unless the caller
accepts it (``accept_checksum_mismatch``, ``--accept-checksum-mismatch`` or
``MEMAUDIT_ACCEPT_CHECKSUM_MISMATCH=1``), and then the mismatching names are kept under
``meta["artifact"]["checksum_mismatch"]``. Writing records the digests of the files written.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from ..errors import PackageError
from .artifact_manifest import (
    MANIFEST,
    MAX_EXTRA_FILE_BYTES,
    RECORD_LISTS,
    REQUIRED_FILES,
    check_digests,
    listed_digests,
    memaudit_block,
    package_id_of,
    plain_extra_name,
    read_extra_entries,
    with_digests,
)
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

__all__ = [
    "COVERAGE_CORE", "LIST_FILES", "MANIFEST", "MAX_EXTRA_FILE_BYTES", "RENAMES", "REQUIRED_FILES",
    "artifact_records", "is_artifact_dir", "mapped_names", "read_artifact_dir", "write_artifact_dir",
    "write_artifact_files",
]

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


def mapped_names(key: str) -> tuple[str, ...]:
    """The keys of a ``key`` record that the reader turns into something else: the artifact's
    names for native fields, and for candidates the keys folded into or out of coverage."""
    names = tuple(art for _, art in RENAMES[key])
    return names + ("cost_tokens", "coverage_annotations") if key == "candidates" else names


def is_artifact_dir(path: Path) -> bool:
    return path.is_dir() and (path / "candidate_memories.jsonl").exists()


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


def _accept_mismatch(flag: bool | None) -> bool:
    if flag is not None:
        return flag
    return os.environ.get("MEMAUDIT_ACCEPT_CHECKSUM_MISMATCH", "") not in ("", "0")


def _required_files(directory: Path) -> dict[str, bytes]:
    """The seven files' bytes; a link or an entry that is not a regular file is refused."""
    for name in REQUIRED_FILES:
        path = directory / name
        if path.is_symlink():
            raise PackageError("is a symbolic link; artifact files must be regular files inside the directory",
                               source=str(path))
        if not path.exists():
            raise PackageError(
                f"missing {name}; an artifact package directory holds {', '.join(REQUIRED_FILES)}",
                source=str(directory),
            )
    return {name: read_bytes(directory / name) for name in REQUIRED_FILES}


def read_artifact_dir(directory: Path, *, accept_checksum_mismatch: bool | None = None) -> Package:
    """Read and fully validate an artifact directory (and the digests its manifest lists)."""
    directory = Path(directory)
    raw_files = _required_files(directory)
    manifest_source = str(directory / MANIFEST)
    manifest = loads_strict(decode_utf8(raw_files[MANIFEST], source=manifest_source), source=manifest_source)
    if not isinstance(manifest, dict):
        raise PackageError(f"found {describe(manifest)}, expected a JSON object", source=manifest_source)
    stored = memaudit_block(manifest, manifest_source)
    mismatched = check_digests(directory, manifest, raw_files, manifest_source,
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

    native_top = dict(stored.get("top", {}))
    package_id = package_id_of(manifest, native_top, manifest_source, directory)
    native_top.pop("package_id", None)

    cand_source = str(directory / LIST_FILES["candidates"])
    cost_from_tokens: list[str] = []
    by_id: dict[str, dict[str, Any]] = {}
    for cand, number in zip(lists["candidates"], line_of["candidates"]):
        _check_candidate_row(cand, cand_source, f"line {number}")
        if "cost" not in cand and "cost_tokens" in cand:
            cand["cost"] = cand["cost_tokens"]
            if isinstance(cand.get("candidate_id"), str):
                cost_from_tokens.append(cand["candidate_id"])
        if isinstance(cand.get("candidate_id"), str):
            by_id.setdefault(cand["candidate_id"], cand)
        cand.setdefault("coverage", {})

    cov_source = str(directory / "coverage_matrix.jsonl")
    for row, number in zip(coverage_rows, coverage_lines):
        _fold_coverage_row(row, by_id, unit_ids, cov_source, f"line {number}")
    _restore_kept_keys(lists, stored.get("kept_keys", []), manifest_source)
    extra_files, extra_binaries, not_read = read_extra_entries(directory)

    manifest_kept = {k: v for k, v in manifest.items() if k != "memaudit"}
    meta = _copy(native_top.pop("meta")) if "meta" in native_top else {}
    meta["artifact"] = {
        "manifest": manifest_kept,
        "annotation_decisions": decisions,
        "extra_files": extra_files,
        "cost_from_cost_tokens": cost_from_tokens,
        "absent_lists": stored.get("absent_lists", []),
    }
    if extra_binaries:
        meta["artifact"]["extra_files_base64"] = extra_binaries
    if not_read:
        meta["artifact"]["not_read"] = not_read
    if mismatched:
        meta["artifact"]["checksum_mismatch"] = mismatched

    data: dict[str, Any] = {"format": FORMAT, "package_id": package_id}
    data.update(native_top)
    for key in RECORD_LISTS:
        if key in stored.get("absent_lists", []) and not lists[key]:
            continue
        data[key] = lists[key]
    data["meta"] = meta

    def by_line(key: str) -> Callable[[int], str]:
        return lambda i: f"{LIST_FILES[key]} line {line_of[key][i]}" if i < len(line_of[key]) else f"{key}[{i}]"

    locator = locate_sources({key: by_line(key) for key in LIST_FILES})
    return Package.from_dict(data, source=str(directory), locator=locator)


def _check_candidate_row(cand: dict[str, Any], source: str, where: str) -> None:
    """The two candidate keys the reader folds coverage rows into must be objects."""
    if "coverage" in cand and not isinstance(cand["coverage"], dict):
        raise PackageError(f"found {describe(cand['coverage'])}, expected an object of unit ids and coverage "
                           "(or no key: coverage_matrix.jsonl holds the cells)", source=source, record=where,
                           field="coverage")
    notes = cand.get("coverage_annotations", {})
    if not isinstance(notes, dict):
        raise PackageError(f"found {describe(notes)}, expected an object of unit ids and annotation objects",
                           source=source, record=where, field="coverage_annotations")
    for unit_id, note in notes.items():
        if not isinstance(note, dict):
            raise PackageError(f"found {describe(note)}, expected an object (a coverage cell's annotations)",
                               source=source, record=where, field=f"coverage_annotations.{unit_id}")


def _fold_coverage_row(row: dict[str, Any], by_id: dict[str, dict[str, Any]], unit_ids: set[Any],
                       source: str, where: str) -> None:
    """Fold one coverage_matrix row into its candidate's ``coverage`` (extras: annotations)."""
    for key in COVERAGE_CORE:
        if key not in row:
            raise PackageError("missing", source=source, record=where, field=key)
    owner = by_id.get(row["candidate_id"]) if isinstance(row["candidate_id"], str) else None
    if owner is None:
        raise PackageError(
            f"refers to candidate {describe(row['candidate_id'])}, which is not in candidate_memories.jsonl",
            source=source, record=where, field="candidate_id",
        )
    unit_id = row["unit_id"]
    if not isinstance(unit_id, str):
        raise PackageError(f"found {describe(unit_id)}, expected a unit id string",
                           source=source, record=where, field="unit_id")
    if unit_id not in unit_ids:
        raise PackageError(f"refers to unit {unit_id!r}, which is not in evidence_units.jsonl",
                           source=source, record=where, field="unit_id")
    value = row["coverage"]
    if not is_number(value) or not (0 <= value < float("inf")) or \
            (isinstance(value, int) and value > MAX_EXACT_INT):
        raise PackageError(f"found {describe(value)}, expected a finite number >= 0",
                           source=source, record=where, field="coverage")
    if unit_id in owner["coverage"]:
        raise PackageError(
            f"a second cell for candidate {row['candidate_id']!r} and unit {unit_id!r}; "
            "each (candidate, unit) pair may appear once",
            source=source, record=where, field="unit_id",
        )
    owner["coverage"][unit_id] = value
    extras = {k: v for k, v in row.items() if k not in COVERAGE_CORE}
    if extras:
        notes = owner.setdefault("coverage_annotations", {})
        if unit_id in notes:
            raise PackageError(
                f"annotates unit {unit_id!r} of candidate {row['candidate_id']!r}, which its row in "
                "candidate_memories.jsonl annotates already", source=source, record=where, field="unit_id")
        notes[unit_id] = extras


_KEPT_FIELDS = ("list", "row", "at", "key", "value")


def _restore_kept_keys(lists: dict[str, list[dict[str, Any]]], kept: list[Any], source: str) -> None:
    """Put back the record keys the writer kept in the manifest (see :func:`_keep_colliding`)."""
    for k, entry in enumerate(kept):
        where = f"memaudit.kept_keys[{k}]"
        if not isinstance(entry, dict) or sorted(entry) != sorted(_KEPT_FIELDS):
            raise PackageError(f"found {describe(entry)}, expected an object with exactly "
                               f"{', '.join(_KEPT_FIELDS)}", source=source, field=where)
        rows = lists.get(entry["list"]) if isinstance(entry["list"], str) else None
        if rows is None:
            raise PackageError(f"found {describe(entry['list'])}, expected one of {', '.join(RECORD_LISTS)}",
                               source=source, field=f"{where}.list")
        row_index, at, key = entry["row"], entry["at"], entry["key"]
        if type(row_index) is not int or not 0 <= row_index < len(rows):
            raise PackageError(f"found {describe(row_index)}, expected a record index below {len(rows)} "
                               f"(the records of {LIST_FILES[entry['list']]})", source=source, field=f"{where}.row")
        row = rows[row_index]
        if not isinstance(key, str) or key in row:
            raise PackageError(f"found {describe(key)}, expected a key the record does not hold already",
                               source=source, field=f"{where}.key")
        if type(at) is not int or not 0 <= at <= len(row):
            raise PackageError(f"found {describe(at)}, expected a key position from 0 to {len(row)}",
                               source=source, field=f"{where}.at")
        items = list(row.items())
        items.insert(at, (key, entry["value"]))
        row.clear()
        row.update(items)


def _copy(value: Any) -> Any:
    """A deep copy of JSON data (msgspec: C speed, no recursion trouble within the depth cap)."""
    return msgspec.json.decode(msgspec.json.encode(value))


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
    kinds = {"manifest": dict, "annotation_decisions": list, "extra_files": dict, "extra_files_base64": dict,
             "cost_from_cost_tokens": list, "absent_lists": list}
    for key, kind in kinds.items():
        if key in art and not isinstance(art[key], kind):
            raise bad(key, art[key], "an object" if kind is dict else "a list")
    for k, row in enumerate(art.get("annotation_decisions", [])):
        if not isinstance(row, dict):
            raise bad(f"annotation_decisions[{k}]", row, "an object")
    # The manifest is written as given: its digests must be well formed (they are rewritten).
    listed_digests({k: v for k, v in art.get("manifest", {}).items() if k != "memaudit"}, f"{where}.manifest")
    for key, expected in (("extra_files", "the file's text"), ("extra_files_base64", "the file's bytes as base64")):
        for name, text in art.get(key, {}).items():
            if not isinstance(text, str) or (key == "extra_files_base64" and _b64_bytes(text) is None):
                raise bad(f"{key}.{name}", text, expected)
            if not plain_extra_name(name) or (key == "extra_files_base64" and name in art.get("extra_files", {})):
                raise PackageError(
                    f"names the file {name!r}, which an artifact directory cannot take as an extra file "
                    f"(never one of its seven files, a hidden, nested or empty name, or a name given twice)",
                    package_id=str(data.get("package_id")), field=f"{where}.{key}",
                )
    return meta, art


def _b64_bytes(text: str) -> bytes | None:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        return None


def _keep_colliding(key: str, rows: list[dict[str, Any]], kept: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` without the keys the reader would take for something else, which go to ``kept``.

    A key collides when the reader would map it: an artifact name whose native field the record
    lacks (``candidate_group`` without ``group`` would become the group), and for candidates a
    ``coverage_annotations`` that is not exactly what the reader builds (a non-empty object of
    non-empty annotation objects for units the candidate covers, without the coverage row's own keys).
    """
    pairs = RENAMES[key]
    out = []
    for index, row in enumerate(rows):
        colliding = {art for native, art in pairs if art in row and native not in row}
        if key == "candidates" and "coverage_annotations" in row and not _folds(row):
            colliding.add("coverage_annotations")
        for at, name in enumerate(row):
            if name in colliding:
                kept.append({"list": key, "row": index, "at": at, "key": name, "value": row[name]})
        out.append({k: v for k, v in row.items() if k not in colliding})
    return out


def _folds(cand: dict[str, Any]) -> bool:
    """Whether the candidate's coverage_annotations fold into coverage rows and read back equal."""
    notes, coverage = cand["coverage_annotations"], cand.get("coverage")
    return isinstance(notes, dict) and bool(notes) and isinstance(coverage, dict) and all(
        unit_id in coverage and isinstance(note, dict) and note and not set(note) & set(COVERAGE_CORE)
        for unit_id, note in notes.items()
    )


def artifact_records(package: Package) -> dict[str, Any]:
    """The artifact files' contents for a package (inverse of :func:`read_artifact_dir`).

    Raises PackageError when ``meta["artifact"]`` is malformed, before anything is written.
    Record keys the reader would map (see :func:`_keep_colliding`) travel in the manifest, so
    the package reads back with the same data and the same optimum.
    """
    data = _copy(package.data)
    meta, art = _artifact_meta(data)
    from_tokens = {c for c in art.get("cost_from_cost_tokens", []) if isinstance(c, str)}
    kept: list[dict[str, Any]] = []
    lists = {key: _keep_colliding(key, data.get(key, []), kept) for key in RECORD_LISTS}

    coverage_rows: list[dict[str, Any]] = []
    candidates = []
    for cand in lists["candidates"]:
        coverage = cand.pop("coverage", {})
        notes = cand.pop("coverage_annotations", {})
        for unit_id, value in coverage.items():
            row: dict[str, Any] = {"candidate_id": cand["candidate_id"], "unit_id": unit_id, "coverage": value}
            row.update(notes.get(unit_id, {}))
            coverage_rows.append(row)
        tokens = cand.get("cost_tokens")
        if cand.get("candidate_id") in from_tokens and type(tokens) is type(cand["cost"]) and tokens == cand["cost"]:
            cand.pop("cost")  # the reader takes the cost from cost_tokens again
        candidates.append(_rename(cand, RENAMES["candidates"], to_native=False))

    top = {k: v for k, v in data.items() if k not in ("format", *RECORD_LISTS, "meta")}
    if meta:
        top["meta"] = meta
    manifest = dict(art.get("manifest", {}))
    absent = [k for k in ("experiences", "queries") if k not in data]
    manifest.pop("memaudit", None)
    manifest_top = {k: v for k, v in top.items() if k != "package_id" or manifest.get("instance_id") != v}
    if manifest_top or absent or kept:
        manifest["memaudit"] = {"top": manifest_top, "absent_lists": absent}
        if kept:
            manifest["memaudit"]["kept_keys"] = kept
    extras: dict[str, str | bytes] = dict(art.get("extra_files", {}))
    for name, text in art.get("extra_files_base64", {}).items():
        extras[name] = base64.b64decode(text)
    return {
        "experiences.jsonl": lists["experiences"],
        "evidence_units.jsonl": [_rename(r, RENAMES["units"], to_native=False) for r in lists["units"]],
        "queries.jsonl": [_rename(r, RENAMES["queries"], to_native=False) for r in lists["queries"]],
        "candidate_memories.jsonl": candidates,
        "coverage_matrix.jsonl": coverage_rows,
        "annotation_decisions.jsonl": list(art.get("annotation_decisions", [])),
        MANIFEST: manifest,
        "extra_files": extras,
    }


def _file_contents(records: dict[str, Any]) -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {}
    for name, rows in records.items():
        if name in ("extra_files", MANIFEST):
            continue
        files[name] = "".join(dumps(r, indent=None) + "\n" for r in rows)
    files.update(records["extra_files"])
    manifest = dict(records[MANIFEST])
    if listed_digests(manifest, MANIFEST):  # the files are written anew: record their digests, not the old ones
        digests = {name: hashlib.sha256(body if isinstance(body, bytes) else body.encode("utf-8")).hexdigest()
                   for name, body in files.items()}
        manifest = with_digests(manifest, digests)
    files[MANIFEST] = dumps(manifest, indent=2) + "\n"
    return files


def _writer(body: str | bytes) -> Callable[[Any], None]:
    """A writer for :func:`write_atomic` bound to this ``body`` (not to a loop variable)."""
    return lambda handle: handle.write(body)


def write_artifact_files(records: dict[str, Any], directory: Path) -> None:
    """Write :func:`artifact_records` into an existing, empty directory."""
    for name, body in _file_contents(records).items():
        write_atomic(Path(directory) / name, _writer(body), binary=isinstance(body, bytes))


def write_artifact_dir(package: Package, directory: Path) -> None:
    """Write a package as an artifact directory (which must not exist yet), all or nothing."""
    from .jsonio import OutputPath

    records = artifact_records(package)
    with OutputPath(directory, kind="dir").directory() as tmp:
        write_artifact_files(records, tmp)
