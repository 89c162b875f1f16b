"""Artifact reader: every value it consumes is type-checked. A wrongly typed value in a file or
in the manifest is bad input (exit 2, PackageError naming file, line or field, found and
expected), never an internal error and never a value silently replaced, dropped or ignored."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.errors import PackageError
from memaudit_fast.model.artifact import MANIFEST
from memaudit_fast.model.io import load_package, save_package
from memaudit_fast.model.package import Package


def pkg() -> dict[str, Any]:
    return {
        "format": "memaudit.package/1", "package_id": "p", "budgets": [1],
        "meta": {"note": "kept"},
        "units": [{"unit_id": "u0", "weight": 1}, {"unit_id": "u1", "weight": 1}],
        "candidates": [{"candidate_id": "a", "cost": 1, "coverage": {"u0": 1}},
                       {"candidate_id": "b", "cost": 1, "coverage": {"u1": 1}}],
    }


@pytest.fixture
def art(tmp_path):
    save_package(Package.from_dict(pkg()), tmp_path / "art")
    return tmp_path / "art"


def edit_manifest(art, edit: Callable[[dict[str, Any]], None]) -> None:
    manifest = json.loads((art / MANIFEST).read_text())
    edit(manifest)
    (art / MANIFEST).write_text(json.dumps(manifest))


def edit_line(path, number: int, edit: Callable[[dict[str, Any]], None]) -> None:
    lines = path.read_text().splitlines()
    row = json.loads(lines[number - 1])
    edit(row)
    lines[number - 1] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n")


def refused(art, tmp_path, capsys, *needles: str) -> str:
    """The reader, validate and convert all refuse, with the same message; nothing is written."""
    with pytest.raises(PackageError) as info:
        load_package(art)
    message = str(info.value)
    for needle in needles:
        assert needle in message, message
    assert main(["validate", str(art)]) == 2
    err = capsys.readouterr().err
    assert message in err and "internal error" not in err and "Traceback" not in err
    assert main(["convert", str(art), str(tmp_path / "out.json")]) == 2
    assert main(["convert", str(art), str(tmp_path / "out")]) == 2
    capsys.readouterr()
    assert not (tmp_path / "out.json").exists() and not (tmp_path / "out").exists()
    assert sorted(os.listdir(tmp_path)) == ["art"]
    return message


@pytest.mark.parametrize(("value", "expected"), [(5, "found 5"), ([], "found a list"), ("x", "the string")])
def test_candidate_row_coverage_must_be_an_object(art, tmp_path, capsys, value, expected):
    edit_line(art / "candidate_memories.jsonl", 2, lambda row: row.__setitem__("coverage", value))
    refused(art, tmp_path, capsys, "candidate_memories.jsonl", "line 2", "field 'coverage'", expected,
            "expected an object")


@pytest.mark.parametrize(("value", "field"), [
    ("x", "field 'coverage_annotations'"),
    ([1], "field 'coverage_annotations'"),
    ({"u0": 5}, "field 'coverage_annotations.u0'"),
])
def test_candidate_row_annotations_must_be_objects(art, tmp_path, capsys, value, field):
    edit_line(art / "candidate_memories.jsonl", 1, lambda row: row.__setitem__("coverage_annotations", value))
    edit_line(art / "coverage_matrix.jsonl", 1, lambda row: row.__setitem__("rationale", "r"))
    refused(art, tmp_path, capsys, "candidate_memories.jsonl", "line 1", field)


def test_a_cell_annotated_twice_is_refused(art, tmp_path, capsys):
    edit_line(art / "candidate_memories.jsonl", 1,
              lambda row: row.__setitem__("coverage_annotations", {"u0": {"rationale": "one"}}))
    edit_line(art / "coverage_matrix.jsonl", 1, lambda row: row.__setitem__("rationale", "two"))
    refused(art, tmp_path, capsys, "coverage_matrix.jsonl", "line 1", "annotates already")


@pytest.mark.parametrize(("edit", "needles"), [
    (lambda m: m.__setitem__("memaudit", "x"), ("field 'memaudit'", "found the string 'x'")),
    (lambda m: m.__setitem__("memaudit", ["top"]), ("field 'memaudit'", "found a list")),
    (lambda m: m["memaudit"].__setitem__("top", "x"), ("field 'memaudit.top'", "expected an object")),
    (lambda m: m["memaudit"].__setitem__("top", [["package_id", "zz"], ["budgets", [1]]]),
     ("field 'memaudit.top'", "found a list")),
    (lambda m: m["memaudit"]["top"].__setitem__("package_id", 123), ("memaudit.top.package_id", "found 123")),
    (lambda m: m["memaudit"]["top"].__setitem__("package_id", ""), ("memaudit.top.package_id", "non-empty")),
    (lambda m: m["memaudit"]["top"].__setitem__("package_id", None), ("memaudit.top.package_id", "null")),
    (lambda m: m["memaudit"]["top"].__setitem__("meta", "x"), ("memaudit.top.meta", "expected an object")),
    (lambda m: m["memaudit"]["top"].__setitem__("units", []), ("memaudit.top.units", "directory's files")),
    (lambda m: m["memaudit"]["top"].__setitem__("format", "x"), ("memaudit.top.format",)),
    (lambda m: m["memaudit"].__setitem__("absent_lists", 5), ("memaudit.absent_lists", "found 5")),
    (lambda m: m["memaudit"].__setitem__("absent_lists", ["units"]), ("memaudit.absent_lists[0]",)),
    (lambda m: m["memaudit"].__setitem__("absent_lists", ["queries", "queries"]), ("memaudit.absent_lists[1]",)),
    (lambda m: m["memaudit"].__setitem__("extra", 1), ("memaudit.extra", "unknown key")),
    (lambda m: m["memaudit"].__setitem__("kept_keys", "x"), ("memaudit.kept_keys",)),
    (lambda m: m["memaudit"].__setitem__("kept_keys", [{"list": "units"}]), ("memaudit.kept_keys[0]",)),
    (lambda m: m["memaudit"].__setitem__("kept_keys", [{"list": "units", "row": 9, "at": 0, "key": "k",
                                                        "value": 1}]), ("memaudit.kept_keys[0].row",)),
    (lambda m: m["memaudit"].__setitem__("kept_keys", [{"list": "units", "row": 0, "at": 0, "key": "unit_id",
                                                        "value": 1}]), ("memaudit.kept_keys[0].key",)),
    (lambda m: m["memaudit"].__setitem__("kept_keys", [{"list": "nope", "row": 0, "at": 0, "key": "k",
                                                        "value": 1}]), ("memaudit.kept_keys[0].list",)),
    (lambda m: (m.pop("memaudit"), m.__setitem__("instance_id", 7)), ("field 'instance_id'", "found 7")),
    (lambda m: m.__setitem__("sha256", "abc"), ("field 'sha256'", "expected an object")),
    (lambda m: m.__setitem__("sha256", {"queries.jsonl": "abc"}), ("sha256.queries.jsonl", "64 hex digits")),
    (lambda m: m.__setitem__("sha256", {"queries.jsonl": 5}), ("sha256.queries.jsonl", "found 5")),
    (lambda m: m.__setitem__("files", [{"path": "queries.jsonl", "sha256": "zz"}]), ("files[0].sha256",)),
    (lambda m: m.__setitem__("files", {"queries.jsonl": {"sha256": None}}), ("files.queries.jsonl.sha256",)),
    # a name too long for the file system names no file (it was an OSError: internal error)
    (lambda m: m.__setitem__("sha256", {"x" * 300: "0" * 64}), ("not a regular file", "300 chars")),
])
def test_manifest_values_are_refused_not_repaired(art, tmp_path, capsys, edit, needles):
    edit_manifest(art, edit)
    refused(art, tmp_path, capsys, MANIFEST, *needles)


def test_a_good_manifest_still_reads(art):
    package = load_package(art)
    assert package.package_id == "p" and package.meta["note"] == "kept" and package.budgets == [1]


def test_instance_id_names_the_package_when_no_id_is_stored(art):
    edit_manifest(art, lambda m: (m["memaudit"]["top"].pop("package_id"), m.__setitem__("instance_id", "inst")))
    assert load_package(art).package_id == "inst"


def test_meta_artifact_manifest_with_a_bad_digest_is_refused_before_writing(tmp_path, capsys):
    data = pkg()
    data["meta"] = {"artifact": {"manifest": {"sha256": "abc"}}}
    src = tmp_path / "p.json"
    src.write_text(json.dumps(data))
    assert main(["convert", str(src), str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "meta.artifact.manifest" in err and "field 'sha256'" in err
    assert sorted(os.listdir(tmp_path)) == ["p.json"]
