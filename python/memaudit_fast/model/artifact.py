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

Paths are never taken from file contents; symbolic links inside the directory are refused.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import PackageError
from .jsonio import describe, dumps, loads_strict, read_text, write_atomic
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


def _read_jsonl(path: Path) -> tuple[list[dict[str, Any]], list[int]]:
    rows: list[dict[str, Any]] = []
    lines: list[int] = []
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
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


def read_artifact_dir(directory: Path) -> Package:
    """Read and fully validate an artifact directory."""
    directory = Path(directory)
    for name in REQUIRED_FILES:
        path = _safe_file(directory, name)
        if not path.is_file():
            raise PackageError(
                f"missing {name}; an artifact package directory holds {', '.join(REQUIRED_FILES)}",
                source=str(directory),
            )
    manifest = loads_strict(read_text(directory / MANIFEST), source=str(directory / MANIFEST))
    if not isinstance(manifest, dict):
        raise PackageError(f"found {describe(manifest)}, expected a JSON object", source=str(directory / MANIFEST))

    lists: dict[str, list[dict[str, Any]]] = {}
    line_of: dict[str, list[int]] = {}
    for key, name in LIST_FILES.items():
        rows, lines = _read_jsonl(directory / name)
        lists[key] = [_rename(r, RENAMES[key], to_native=True) for r in rows]
        line_of[key] = lines
    coverage_rows, coverage_lines = _read_jsonl(directory / "coverage_matrix.jsonl")
    decisions, _ = _read_jsonl(directory / "annotation_decisions.jsonl")

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
        if entry.is_symlink() or not entry.is_file() or entry.stat().st_size > MAX_EXTRA_FILE_BYTES:
            skipped.append(entry.name)
            continue
        try:
            extra_files[entry.name] = entry.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            skipped.append(entry.name)

    manifest_kept = {k: v for k, v in manifest.items() if k != "memaudit"}
    meta = copy.deepcopy(native_top.pop("meta", {})) if isinstance(native_top.get("meta"), dict) else {}
    meta["artifact"] = {
        "manifest": manifest_kept,
        "annotation_decisions": decisions,
        "extra_files": extra_files,
        "cost_from_cost_tokens": cost_from_tokens,
        "absent_lists": stored.get("absent_lists", []),
    }
    if skipped:
        meta["artifact"]["not_read"] = skipped

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


def artifact_records(package: Package) -> dict[str, Any]:
    """The artifact files' contents for a package (inverse of :func:`read_artifact_dir`)."""
    data = copy.deepcopy(package.data)
    meta = data.get("meta", {}) if isinstance(data.get("meta"), dict) else {}
    art = meta.pop("artifact", {}) if isinstance(meta.get("artifact"), dict) else {}
    from_tokens = set(art.get("cost_from_cost_tokens", []))

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


def write_artifact_dir(package: Package, directory: Path) -> None:
    """Write a package as an artifact directory (which must not exist yet)."""
    records = artifact_records(package)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=False)
    for name, rows in records.items():
        if name == "extra_files":
            continue
        path = directory / name
        if name.endswith(".jsonl"):
            text = "".join(dumps(r, indent=None) + "\n" for r in rows)
        else:
            text = dumps(rows, indent=2) + "\n"
        write_atomic(path, _text_writer(text))
    for name, text in records["extra_files"].items():
        if "/" in name or "\\" in name or name in ("", ".", ".."):
            continue  # never write outside the directory
        write_atomic(directory / name, _text_writer(text))
