"""Readers: artifact directories. Errors point at the file and line that hold them, manifest
digests are checked, and meta.artifact never decides which files are written."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.errors import PackageError
from memaudit_fast.model.artifact import MANIFEST, REQUIRED_FILES
from memaudit_fast.model.io import load_package, save_package
from memaudit_fast.model.package import Package


def pkg() -> dict:
    return {
        "format": "memaudit.package/1", "package_id": "a/1", "budgets": [3],
        "units": [{"unit_id": f"u{r}", "weight": 1.0} for r in range(3)],
        "candidates": [{"candidate_id": f"c{i}", "cost": 1, "coverage": {f"u{i % 3}": 1.0, f"u{(i + 1) % 3}": 0.5}}
                       for i in range(30)],
    }


@pytest.fixture
def art(tmp_path):
    save_package(Package.from_dict(pkg()), tmp_path / "art")
    return tmp_path / "art"


def rewrite_line(path, number, edit):
    lines = path.read_text().splitlines()
    row = json.loads(lines[number - 1])
    edit(row)
    lines[number - 1] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(("value", "needle"), [(-1, ">= 0"), ("x", "finite number"), (2**60, "finite number")])
def test_coverage_errors_point_at_the_coverage_matrix_line(art, value, needle):
    rewrite_line(art / "coverage_matrix.jsonl", 29, lambda row: row.__setitem__("coverage", value))
    with pytest.raises(PackageError) as info:
        load_package(art)
    message = str(info.value)
    assert "coverage_matrix.jsonl" in message and "line 29" in message and needle in message, message
    assert "candidate_memories.jsonl" not in message


def test_coverage_row_naming_an_unknown_unit(art):
    rewrite_line(art / "coverage_matrix.jsonl", 7, lambda row: row.__setitem__("unit_id", "zz"))
    with pytest.raises(PackageError, match=r"coverage_matrix.jsonl: line 7: field 'unit_id'.*'zz'"):
        load_package(art)


def test_bad_byte_in_an_artifact_file_is_blamed_on_its_line(art):
    path = art / "candidate_memories.jsonl"
    lines = path.read_bytes().split(b"\n")
    lines[4] = lines[4].replace(b'"c4"', b'"c\xff4"')
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(PackageError, match="candidate_memories.jsonl: line 5 column"):
        load_package(art)


def add_digests(art, layout: str) -> dict:
    manifest = json.loads((art / MANIFEST).read_text())
    digests = {name: hashlib.sha256((art / name).read_bytes()).hexdigest() for name in REQUIRED_FILES if name != MANIFEST}
    if layout == "sha256":
        manifest["sha256"] = digests
    elif layout == "files-dict":
        manifest["files"] = {name: {"sha256": d, "rows": 1} for name, d in digests.items()}
    else:
        manifest["files"] = [{"path": name, "sha256": d} for name, d in digests.items()]
    (art / MANIFEST).write_text(json.dumps(manifest))
    return manifest


@pytest.mark.parametrize("layout", ["sha256", "files-dict", "files-list"])
def test_manifest_digests_are_checked(art, tmp_path, capsys, monkeypatch, layout):
    monkeypatch.setenv("MEMAUDIT_ACCEPT_CHECKSUM_MISMATCH", "0")  # restored after the CLI sets it
    add_digests(art, layout)
    load_package(art)  # all match
    with open(art / "queries.jsonl", "a") as handle:
        handle.write("\n")
    with pytest.raises(PackageError) as info:
        load_package(art)
    assert "queries.jsonl" in str(info.value) and "sha256" in str(info.value)
    assert "--accept-checksum-mismatch" in str(info.value)
    assert main(["validate", str(art)]) == 2
    assert main(["validate", "--accept-checksum-mismatch", str(art)]) == 0
    monkeypatch.setenv("MEMAUDIT_ACCEPT_CHECKSUM_MISMATCH", "0")
    with pytest.raises(PackageError):
        load_package(art)
    from memaudit_fast.model.artifact import read_artifact_dir

    package = read_artifact_dir(art, accept_checksum_mismatch=True)
    assert package.data["meta"]["artifact"]["checksum_mismatch"] == ["queries.jsonl"]
    # Written anew, the files carry their own digests, so the copy reads back cleanly.
    save_package(package, tmp_path / "copy")
    load_package(tmp_path / "copy")
    capsys.readouterr()


def test_a_digest_for_a_file_outside_the_directory_is_bad_input(art):
    manifest = json.loads((art / MANIFEST).read_text())
    manifest["sha256"] = {"../secret": "00"}
    (art / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(PackageError, match="not a file of this directory"):
        load_package(art)


@pytest.mark.parametrize(
    ("artifact", "needle"),
    [
        ({"extra_files": {"candidate_memories.jsonl": "{}\n"}}, "seven files"),
        ({"extra_files": {"../escape.txt": "x"}}, "extra_files"),
        ({"extra_files": {".hidden": "x"}}, "extra_files"),
        ({"extra_files": {"ok.txt": 5}}, "extra_files.ok.txt"),
        ({"extra_files": ["x"]}, "meta.artifact.extra_files"),
        ({"annotation_decisions": "x"}, "annotation_decisions"),
        ({"annotation_decisions": [1]}, "annotation_decisions[0]"),
        ({"manifest": []}, "meta.artifact.manifest"),
        ("not an object", "meta.artifact"),
    ],
)
def test_meta_artifact_cannot_choose_or_break_the_files(tmp_path, capsys, artifact, needle):
    data = pkg()
    data["meta"] = {"artifact": artifact}
    src = tmp_path / "p.json"
    src.write_text(json.dumps(data))
    dst = tmp_path / "out"
    with pytest.raises(PackageError, match="meta.artifact") as info:
        save_package(load_package(src), dst)
    assert needle in str(info.value)
    assert not dst.exists()
    assert main(["convert", str(src), str(dst)]) == 2
    assert "Traceback" not in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["p.json"]  # no half-written directory, no temporary


def test_safe_extra_files_round_trip(tmp_path):
    data = pkg()
    data["meta"] = {"artifact": {"extra_files": {"notes.md": "hello\n"}}}
    package = Package.from_dict(data)
    save_package(package, tmp_path / "art")
    assert (tmp_path / "art" / "notes.md").read_text() == "hello\n"
    again = load_package(tmp_path / "art")
    assert again.data["meta"]["artifact"]["extra_files"] == {"notes.md": "hello\n"}
    assert [c["coverage"] for c in again.candidates] == [c["coverage"] for c in package.candidates]
