"""--force replaces only what report and convert write themselves: a directory that holds
any other file is refused (exit 2) and left exactly as it was."""

from __future__ import annotations

import json

from memaudit_fast.cli.main import main
from memaudit_fast.model.examples import example_package_path


def results(tmp_path):
    record = {"format": "memaudit.result/1", "package_id": "small/base/s0", "budget": 4, "opt": 2.5,
              "status": "optimal", "proven_optimal": True, "selected": ["c1"],
              "writers": {"gvt": {"value": 2.0, "ratio": 0.8}}}
    path = tmp_path / "res.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return path


def listing(directory):
    return {p.name: p.read_bytes() for p in directory.iterdir()}


def test_report_force_keeps_a_directory_of_the_users_files(tmp_path, capsys):
    out = tmp_path / "precious"
    out.mkdir()
    (out / "notes.txt").write_text("keep\n")
    (out / "index.html").write_text("<html>\n")
    before = listing(out)
    assert main(["report", str(results(tmp_path)), "--out", str(out), "--force"]) == 2
    assert listing(out) == before
    err = capsys.readouterr().err
    assert "precious/" in err and "--out" in err
    (out / "notes.txt").unlink()  # a user's index.html alone is not a report either
    assert main(["report", str(results(tmp_path)), "--out", str(out), "--force"]) == 2
    assert (out / "index.html").read_text() == "<html>\n"


def test_report_force_keeps_a_file_added_to_an_earlier_report(tmp_path, capsys):
    res = results(tmp_path)
    out = tmp_path / "rep"
    assert main(["report", str(res), "--out", str(out)]) == 0
    (out / "mine.txt").write_text("keep\n")
    assert main(["report", str(res), "--out", str(out), "--force"]) == 2
    assert (out / "mine.txt").read_text() == "keep\n"
    assert "mine.txt" in capsys.readouterr().err
    (out / "mine.txt").unlink()
    assert main(["report", str(res), "--out", str(out), "--force"]) == 0  # its own files only: replaced
    assert (out / "index.html").exists()


def test_convert_force_keeps_a_file_added_to_an_artifact_directory(tmp_path, capsys):
    src = str(example_package_path())
    art = tmp_path / "art"
    assert main(["convert", src, str(art)]) == 0
    (art / "mynotes.txt").write_text("keep\n")
    before = listing(art)
    assert main(["convert", src, str(art), "--force"]) == 2
    assert listing(art) == before
    assert "mynotes.txt" in capsys.readouterr().err
    (art / "mynotes.txt").unlink()
    assert main(["convert", src, str(art), "--force"]) == 0


def test_convert_force_keeps_the_packages_own_extra_files(tmp_path):
    src = str(example_package_path())
    art = tmp_path / "art"
    assert main(["convert", src, str(art)]) == 0
    (art / "README.md").write_text("part of the package\n")
    copy = tmp_path / "copy"
    assert main(["convert", str(art), str(copy)]) == 0
    assert main(["convert", str(art), str(copy), "--force"]) == 0  # README.md is the layout's own now
    assert (copy / "README.md").read_text() == "part of the package\n"
