"""Runs of blank lines are passed over in bulk by every line reader (sets from files, gzip and
stdin; results files), with line numbers, offsets and caps as if read one by one."""

from __future__ import annotations

import gzip
import io
import json

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.model.lines import iter_stream_lines, nonblank_lines
from memaudit_fast.model.sets import iter_raw_members, iter_set_entries, resolve_member
from memaudit_fast.results.records import parse_results, read_records
from memaudit_fast.suites.small import generate_package

RUN = 1 << 20  # a million newlines


@pytest.fixture(scope="module")
def package_line() -> str:
    return json.dumps(generate_package("base", seed=0), separators=(",", ":"))


def layout(package_line: str) -> tuple[str, list[int]]:
    """A set with long blank runs (some with spaces, tabs and CR) and the numbers of its lines that
    are not blank."""
    text = "\n" * RUN + package_line + "\n" + " \n\t\r\n" * 3 + "not json\n" + "\n" * RUN + '{"x": 1}\n \n'
    return text, [n for n, line in enumerate(text.split("\n"), start=1) if line.strip()]


def test_a_run_of_newlines_is_few_items():
    items = list(iter_stream_lines(io.BufferedReader(io.BytesIO(b"\n" * (8 * RUN)), 1 << 20), "s",
                                   line_cap=1 << 30, stream_cap=1 << 40))
    assert len(items) <= 16  # one per MB at most, not one per line
    assert sum(len(line) for _, line in items) == 8 * RUN and all(not line.strip() for _, line in items)
    assert items[0][0] == 1 and items[-1][0] + items[-1][1].count(b"\n") - 1 == 8 * RUN


@pytest.mark.parametrize("name", ["s.jsonl", "s.jsonl.gz"])
def test_line_numbers_after_blank_runs(tmp_path, package_line, name):
    text, numbers = layout(package_line)
    path = tmp_path / name
    path.write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    entries = list(iter_set_entries(path))
    assert [int(e.label.rsplit(" ", 1)[-1]) for e in entries] == numbers
    assert [e.package is not None for e in entries] == [True, False, False]


def test_spans_point_at_the_right_bytes(tmp_path, package_line):
    text, numbers = layout(package_line)
    path = tmp_path / "s.jsonl"
    path.write_text(text)
    members = [resolve_member(m) for m in iter_raw_members(path, spans=True)]
    assert [int(m[0].rsplit(" ", 1)[-1]) for m in members] == numbers
    assert members[0][1] == "text" and members[0][2].strip() == package_line.encode()


def test_stdin_and_batch_number_lines_alike(tmp_path, package_line, monkeypatch, capsys):
    text, numbers = layout(package_line)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(gzip.compress(text.encode())))))
    assert main(["validate", "-"]) == 2
    err = capsys.readouterr().err
    assert f"<stdin> line {numbers[1]}:" in err and f"<stdin> line {numbers[2]}:" in err
    path = tmp_path / "s.jsonl"
    path.write_text(text)
    out = tmp_path / "res.jsonl"
    assert main(["batch", str(path), "--out", str(out), "--quiet", "--finish", "none"]) == 3
    sources = [json.loads(line)["source"] for line in out.read_text().splitlines()]
    assert sorted({int(s.rsplit(" ", 1)[-1]) for s in sources}) == numbers


@pytest.mark.parametrize("cap", [1000, RUN, RUN + 5])
def test_set_cap_within_a_blank_run_names_its_line(tmp_path, package_line, monkeypatch, cap):
    path = tmp_path / "s.jsonl"
    path.write_text("\n" * (3 * RUN) + package_line + "\n")
    monkeypatch.setenv("MEMAUDIT_MAX_SET_BYTES", str(cap))
    (entry,) = iter_set_entries(path)
    assert entry.label.endswith(f"line {cap + 1}") and "passes the limit" in str(entry.error)


@pytest.mark.parametrize("text", ["", "\n", "a", "a\n", "\n\n a\n\n b \n \t\n", "x\n\ny", " \u2028 \nz", "\r\n\x0b\nq\r"])
def test_nonblank_lines_match_a_split(text):
    split = [(n, line) for n, line in enumerate(text.split("\n"), start=1) if line.strip()]
    assert [(n, line) for n, line, _ in nonblank_lines(text)] == split
    raw = text.encode()  # bytes are blank by bytes.strip (ASCII whitespace only)
    split_raw = [(n, line) for n, line in enumerate(raw.split(b"\n"), start=1) if line.strip()]
    assert [(n, line) for n, line, _ in nonblank_lines(raw)] == split_raw
    lasts = [last for _, _, last in nonblank_lines(text)]
    assert lasts == [n == len(text.split("\n")) for n, _ in split]


def test_results_readers_after_blank_runs(tmp_path):
    record = {"format": "memaudit.result/1", "status": "error", "error": "boom"}
    line = json.dumps(record)
    path = tmp_path / "res.jsonl"
    path.write_text("\n" * RUN + line + "\n" + "\n" * RUN + '{"format": "memaudit.result/1", "status": "x"}\n')
    from memaudit_fast.errors import PackageError

    with pytest.raises(PackageError, match=f"line {2 * RUN + 2}: field 'status'"):
        read_records(path)
    parsed = parse_results(path.read_bytes(), "r")
    assert [n for n, _ in parsed.records] == [RUN + 1, 2 * RUN + 2]
    path.write_text("\n" * RUN + line + "\n" + "\n" * 3 + line[:30])
    with pytest.raises(PackageError, match=f"line {RUN + 5}: the last line is cut off"):
        read_records(path)
