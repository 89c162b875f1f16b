"""Artifact directories: every entry besides the seven files is read and kept (text or bytes,
written back byte for byte) or refused with its name; none goes missing in validate or convert."""

from __future__ import annotations

import json
import os

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.errors import PackageError
from memaudit_fast.model.io import load_package, save_package
from memaudit_fast.model.package import Package


def pkg() -> dict:
    return {
        "format": "memaudit.package/1", "package_id": "p", "budgets": [1],
        "units": [{"unit_id": "u0", "weight": 1}],
        "candidates": [{"candidate_id": "a", "cost": 1, "coverage": {"u0": 1}}],
    }


@pytest.fixture
def art(tmp_path):
    save_package(Package.from_dict(pkg()), tmp_path / "art")
    return tmp_path / "art"


def make_link(art):
    os.symlink("/etc/hostname", art / "link.txt")


def make_dangling_link(art):
    os.symlink(art / "nowhere", art / "gone.txt")


def make_fifo(art):
    os.mkfifo(art / "pipe")


def make_subdir(art):
    (art / "figures").mkdir()
    (art / "figures" / "f.txt").write_text("x")


def make_hidden(art):
    (art / ".notes").write_text("x")


@pytest.mark.parametrize(("make", "needles"), [
    (make_link, ("link.txt", "symbolic link")),
    (make_dangling_link, ("gone.txt", "symbolic link")),
    pytest.param(make_fifo, ("pipe", "not a regular file"),
                 marks=pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")),
    (make_subdir, ("figures", "subdirectory")),
    (make_hidden, (".notes", "hidden name")),
])
def test_entries_that_cannot_be_kept_are_refused(art, tmp_path, capsys, make, needles):
    make(art)
    with pytest.raises(PackageError) as info:
        load_package(art)
    for needle in needles:
        assert needle in str(info.value)
    assert main(["validate", str(art)]) == 2
    assert main(["convert", str(art), str(tmp_path / "out")]) == 2
    assert main(["convert", str(art), str(tmp_path / "out.json")]) == 2
    err = capsys.readouterr().err
    assert needles[0] in err and "Traceback" not in err and "internal error" not in err
    assert sorted(os.listdir(tmp_path)) == ["art"]


@pytest.mark.parametrize("body", [b"\xff\xfe\x00binary", b"plain text\n", b"", b"\x1f\x8b\x08\x00gz-like"])
@pytest.mark.parametrize("name", ["notes.bin", "readme.md", "data.gz"])
def test_extra_regular_files_survive_convert_both_ways(art, tmp_path, capsys, name, body):
    (art / name).write_bytes(body)
    assert main(["validate", str(art)]) == 0
    assert main(["convert", str(art), str(tmp_path / "copy")]) == 0
    assert (tmp_path / "copy" / name).read_bytes() == body
    assert main(["convert", str(art), str(tmp_path / "p.json")]) == 0
    assert main(["convert", str(tmp_path / "p.json"), str(tmp_path / "again")]) == 0
    assert (tmp_path / "again" / name).read_bytes() == body
    assert sorted(os.listdir(tmp_path / "again")) == sorted(os.listdir(art))
    capsys.readouterr()


def test_binary_extra_file_is_listed_as_base64(art):
    (art / "notes.bin").write_bytes(b"\xff")
    block = load_package(art).meta["artifact"]
    assert block["extra_files_base64"] == {"notes.bin": "/w=="} and "notes.bin" not in block["extra_files"]


def test_a_file_too_large_to_read_is_named_by_convert(art, tmp_path, capsys):
    with open(art / "huge.log", "wb") as handle:
        handle.truncate(1 << 30)  # sparse
    assert main(["convert", str(art), str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert "not carried over" in err and "huge.log" in err


@pytest.mark.parametrize(("block", "needle"), [
    ({"extra_files_base64": {"x.bin": "not base64!"}}, "extra_files_base64.x.bin"),
    ({"extra_files_base64": {"x.bin": 5}}, "extra_files_base64.x.bin"),
    ({"extra_files_base64": {".hidden": "AA=="}}, "extra_files_base64"),
    ({"extra_files_base64": {"x": "AA=="}, "extra_files": {"x": "text"}}, "given twice"),
])
def test_bad_base64_extras_are_refused_before_writing(tmp_path, capsys, block, needle):
    data = pkg()
    data["meta"] = {"artifact": block}
    (tmp_path / "p.json").write_text(json.dumps(data))
    assert main(["convert", str(tmp_path / "p.json"), str(tmp_path / "out")]) == 2
    assert needle in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["p.json"]


def test_a_required_file_that_is_a_fifo_is_named_as_such(art, tmp_path, capsys):
    if not hasattr(os, "mkfifo"):
        pytest.skip("needs FIFOs")
    (art / "queries.jsonl").unlink()
    os.mkfifo(art / "queries.jsonl")
    with pytest.raises(PackageError, match="queries.jsonl: is a FIFO"):
        load_package(art)
