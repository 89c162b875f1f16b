"""Readers: sets and directories. Errors land on the right line, the rest is still read, caps
hold per file, per line and per decompressed stream, only regular files are read, and every
directory entry that is not read is reported."""

from __future__ import annotations

import gzip
import json
import os

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.errors import PackageError
from memaudit_fast.model.io import load_package, save_package
from memaudit_fast.model.jsonio import read_bytes
from memaudit_fast.model.package import Package
from memaudit_fast.model.sets import iter_raw_members, iter_set_entries


def pkg(k: int) -> dict:
    return {
        "format": "memaudit.package/1", "package_id": f"s/{k}", "budgets": [2],
        "units": [{"unit_id": "u", "weight": 1.0}],
        "candidates": [{"candidate_id": "c", "cost": 1, "coverage": {"u": 1.0}}],
    }


def line(k: int) -> bytes:
    return (json.dumps(pkg(k)) + "\n").encode()


def test_bad_utf8_on_line_10_is_blamed_on_line_10_and_the_rest_is_read(tmp_path, capsys):
    raw = b"".join(line(k) for k in range(1, 10)) + b'{"x": "\xff\xfe"}\n' + b"".join(line(k) for k in range(11, 21))
    for name, data in (("s.jsonl", raw), ("s.jsonl.gz", gzip.compress(raw))):
        path = tmp_path / name
        path.write_bytes(data)
        entries = list(iter_set_entries([path]))
        assert len(entries) == 20
        bad = [e for e in entries if e.error is not None]
        assert [e.label for e in bad] == [f"{path} line 10"]
        assert "UTF-8" in str(bad[0].error)
        assert [e.package.package_id for e in entries if e.package] == [f"s/{k}" for k in range(1, 21) if k != 10]
    assert main(["validate", "-q", str(tmp_path / "s.jsonl")]) == 2
    assert "line 10" in capsys.readouterr().err


def test_per_line_cap_skips_one_long_line_without_holding_it(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMAUDIT_MAX_FILE_BYTES", "2000")
    long_line = b'{"pad": "' + b"x" * 50_000 + b'"}\n'
    raw = line(1) + long_line + line(3)
    path = tmp_path / "s.jsonl.gz"
    path.write_bytes(gzip.compress(raw))
    entries = list(iter_set_entries([path]))
    assert [e.label.rsplit(" ", 1)[-1] for e in entries] == ["1", "2", "3"]
    assert entries[0].package and entries[2].package
    assert "longer than the limit of 2000 bytes" in str(entries[1].error)


def test_decompressed_stream_cap(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMAUDIT_MAX_SET_BYTES", "1000")
    path = tmp_path / "s.jsonl.gz"
    path.write_bytes(gzip.compress(b"".join(line(k) for k in range(50))))
    entries = list(iter_set_entries([path]))
    assert entries[-1].error is not None and "MEMAUDIT_MAX_SET_BYTES" in str(entries[-1].error)
    assert len(entries) < 50


def test_file_cap_holds_for_gzip_packages_and_artifact_files(tmp_path, monkeypatch):
    (tmp_path / "p.json.gz").write_bytes(gzip.compress(json.dumps(pkg(1)).encode() + b" " * 10_000))
    save_package(Package.from_dict(pkg(2)), tmp_path / "art")
    monkeypatch.setenv("MEMAUDIT_MAX_FILE_BYTES", "5000")
    with pytest.raises(PackageError, match="larger than the limit of 5000"):
        load_package(tmp_path / "p.json.gz")
    with open(tmp_path / "art" / "annotation_decisions.jsonl", "ab") as handle:
        handle.write(b"\n" * 6000)
    with pytest.raises(PackageError, match="larger than the limit"):
        load_package(tmp_path / "art")


def test_sparse_extra_file_in_artifact_dir_is_not_read_whole(tmp_path):
    save_package(Package.from_dict(pkg(1)), tmp_path / "art")
    with open(tmp_path / "art" / "huge.bin", "wb") as handle:
        handle.truncate(1 << 34)  # 16 GiB, sparse
    package = load_package(tmp_path / "art")
    assert package.data["meta"]["artifact"]["not_read"] == ["huge.bin"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_fifo_and_devices_are_refused_without_blocking(tmp_path, capsys):
    fifo = tmp_path / "p.json"
    os.mkfifo(fifo)
    with pytest.raises(PackageError, match="FIFO"):
        load_package(fifo)
    with pytest.raises(PackageError, match="device"):
        read_bytes(__import__("pathlib").Path("/dev/zero"))
    os.mkfifo(tmp_path / "s.jsonl")
    assert main(["validate", str(tmp_path / "s.jsonl")]) == 2
    assert main(["validate", "/dev/zero"]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_directory_sets_report_every_entry_they_do_not_read(tmp_path, capsys):
    d = tmp_path / "set"
    d.mkdir()
    (d / "a.json").write_bytes(line(1))
    (d / "b.JSON").write_bytes(line(2))
    (d / "c.json.gz").write_bytes(gzip.compress(line(3)))
    (d / "sub").mkdir()
    (d / "sub" / "d.json").write_bytes(line(4))
    (d / "e.jsonl").write_bytes(line(5) + line(6))
    (d / "notes.txt").write_text("hello")
    os.symlink(d / "a.json", d / "link.json")
    os.symlink(tmp_path / "nowhere", d / "dangling.json")
    broken = d / "broken_art"
    broken.mkdir()
    (broken / "experiences.jsonl").write_text("")
    entries = list(iter_set_entries([d]))
    read = sorted(e.package.package_id for e in entries if e.package)
    assert read == ["s/1", "s/3", "s/5", "s/6"]
    reasons = {os.path.basename(e.label.split(" line ")[0]): str(e.error) for e in entries if e.error}
    assert set(reasons) == {"b.JSON", "sub", "notes.txt", "link.json", "dangling.json", "broken_art"}
    assert "symbolic link" in reasons["link.json"] and "symbolic link" in reasons["dangling.json"]
    assert "subdirectory" in reasons["sub"]
    assert "case-sensitive" in reasons["b.JSON"]
    assert "missing" in reasons["broken_art"]
    assert main(["validate", str(d)]) == 2
    err = capsys.readouterr().err
    for name in reasons:
        assert name in err


def test_non_utf8_file_names_do_not_crash(tmp_path, capsys):
    d = tmp_path / "set"
    d.mkdir()
    bad_name = os.fsdecode(b"p\xff.json")
    (d / bad_name).write_bytes(line(1))
    (d / os.fsdecode(b"q\xfe.txt")).write_text("x")
    entries = list(iter_set_entries([d]))
    assert [e.package.package_id for e in entries if e.package] == ["s/1"]
    for e in entries:
        e.label.encode("utf-8")  # labels are always printable
    assert main(["validate", str(d)]) == 2
    _, err = capsys.readouterr()
    assert "\\xfe" in err and "Traceback" not in err


def test_raw_members_keep_their_shape(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(line(1) + b"\n" + line(2))
    members = list(iter_raw_members([path, tmp_path / "missing.json"]))
    assert [m[1] for m in members] == ["text", "text", "error"]
    assert members[1][0].endswith("line 3")


def test_a_set_under_another_suffix_is_told_to_be_named_jsonl(tmp_path):
    # It said only "not valid JSON (Extra data); the file may be truncated or hand-edited".
    path = tmp_path / "set.ndjson"
    path.write_text("\n".join(json.dumps(pkg(k)) for k in range(2)) + "\n")
    with pytest.raises(PackageError, match="name it .jsonl"):
        load_package(path)
    (tmp_path / "bad.json").write_text('{"a": 1} x')
    with pytest.raises(PackageError) as caught:
        load_package(tmp_path / "bad.json")
    assert "jsonl" not in str(caught.value)  # junk after an object is not a set
