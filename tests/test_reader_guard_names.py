"""A path whose name holds a control character (a newline, a tab, an escape) is printed with the
character escaped wherever the readers name it, so every message stays on one line."""

from __future__ import annotations

import json

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.model.jsonio import escape_controls, path_label
from memaudit_fast.suites.small import generate_package


@pytest.mark.parametrize(("text", "shown"), [
    ("a\nb", "a\\nb"), ("a\tb", "a\\tb"), ("a\x1bb", "a\\x1bb"), ("a\x7f", "a\\x7f"), ("a\x85", "a\\x85"),
    ("a\u2028b", "a\\u2028b"), ("plain é ü", "plain é ü"),
])
def test_escape_controls(text, shown):
    assert escape_controls(text) == shown and path_label(text) == shown


def test_undecodable_bytes_are_escaped_too():
    assert path_label(b"a\xff\n".decode("utf-8", "surrogateescape")) == "a\\xff\\n"


@pytest.fixture
def named(tmp_path):
    good = tmp_path / "a\nb.json"
    good.write_text(json.dumps(generate_package("base", seed=0)))
    bad = tmp_path / "c\nd.json"
    bad.write_text("{}")
    other = tmp_path / "e\tf.txt"
    other.write_text("x")
    return tmp_path, good, bad


def one_line_each(text: str, *marks: str) -> None:
    lines = text.splitlines()
    for mark in marks:
        assert any(mark in line for line in lines), (mark, text)


def test_validate_directory_and_files(named, capsys):
    tmp_path, good, bad = named
    assert main(["validate", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    one_line_each(out, "a\\nb.json (")
    one_line_each(err, "c\\nd.json: field 'format'", "e\\tf.txt: not read")
    assert main(["validate", str(good), str(bad)]) == 2
    out, err = capsys.readouterr()
    one_line_each(out, "a\\nb.json (")
    one_line_each(err, "c\\nd.json: field 'format'")
    assert main(["validate", "--json", str(bad)]) == 2
    (line,) = capsys.readouterr().out.splitlines()
    assert "c\\\\nd.json" in line  # JSON escapes it once more


def test_missing_path_and_empty_set(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "no\nsuch.json")]) == 2
    one_line_each(capsys.readouterr().err, "no\\nsuch.json: file not found")
    empty = tmp_path / "em\npty.jsonl"
    empty.write_text("\n")
    assert main(["validate", str(empty)]) == 2
    one_line_each(capsys.readouterr().err, "no packages found in " + str(tmp_path) + "/em\\npty.jsonl")


def test_set_lines_batch_and_results(named, capsys):
    tmp_path, good, _ = named
    line_set = tmp_path / "s\n1.jsonl"
    line_set.write_text(good.read_text() + "\nnot json\n")
    assert main(["validate", str(line_set)]) == 2
    one_line_each(capsys.readouterr().err, "s\\n1.jsonl line 2: column 1")
    out = tmp_path / "r\nes.jsonl"
    assert main(["batch", str(line_set), "--out", str(out), "--quiet", "--finish", "none"]) == 3
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["source"].rsplit(" ", 1)[0] for r in records} == {f"{tmp_path}/s\\n1.jsonl line"}
    capsys.readouterr()
    csv = tmp_path / "o\nut.csv"
    assert main(["export", str(out), str(csv)]) == 0
    one_line_each(capsys.readouterr().out, "o\\nut.csv")
    bad = tmp_path / "b\nad.jsonl"
    bad.write_text('{"format": "memaudit.result/1", "status": "bogus"}\n')
    assert main(["export", str(bad), str(tmp_path / "x.csv")]) == 2
    one_line_each(capsys.readouterr().err, "b\\nad.jsonl: line 1: field 'status'")
    assert main(["report", str(out), "--out", str(tmp_path / "re\nport")]) == 0
    one_line_each(capsys.readouterr().out, "re\\nport/index.html")
