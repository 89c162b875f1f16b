"""Worker processes read the lines of a plain JSONL set themselves (the parent sends where each
line is): the records are those of a run that sends the lines, for every kind of line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from memaudit_fast.experiments.batch import BatchOptions, member_digest, run_batch
from memaudit_fast.model.sets import iter_raw_members, resolve_member
from memaudit_fast.suites.small import generate_package


def mixed_set(path: Path) -> None:
    """Packages, blank lines, a line that is not UTF-8, one that is not JSON, CRLF endings."""
    lines = [json.dumps(generate_package("base", seed=k), ensure_ascii=k % 2 == 0).encode() for k in range(5)]
    lines.insert(2, b"   ")
    lines.insert(3, b'{"format": "memaudit.package/1", "package_id": "caf\xe9"}')
    lines.insert(5, b"not json")
    path.write_bytes(b"\n".join(lines[:4]) + b"\r\n" + b"\n".join(lines[4:]) + b"\n\n")


def untimed(path: Path) -> list[dict]:
    return [{k: v for k, v in json.loads(line).items() if k != "seconds"} for line in path.read_bytes().splitlines()]


def test_a_span_reads_back_as_the_member_its_line_is(tmp_path):
    mixed_set(tmp_path / "set.jsonl")
    plain = list(iter_raw_members([tmp_path / "set.jsonl"]))
    spans = list(iter_raw_members([tmp_path / "set.jsonl"], spans=True))
    assert {kind for _, kind, _ in spans} == {"span"}  # blank lines are no members either way
    resolved = [resolve_member(m) for m in spans]
    assert resolved == plain and [member_digest(m) for m in resolved] == [member_digest(m) for m in plain]
    assert any(kind == "error" and "not UTF-8" in detail for _, kind, detail in resolved)
    gz = tmp_path / "set.jsonl.gz"
    gz.write_bytes(gzip.compress((tmp_path / "set.jsonl").read_bytes()))
    assert {kind for _, kind, _ in iter_raw_members([gz], spans=True)} <= {"text", "error"}  # no offsets in a gzip


def test_workers_reading_spans_write_the_records_of_a_serial_run(tmp_path):
    mixed_set(tmp_path / "set.jsonl")
    options = BatchOptions(budgets=(2.0, 4.0))
    serial = run_batch([tmp_path / "set.jsonl"], tmp_path / "serial.jsonl", options, workers=1, backend="serial")
    local = run_batch([tmp_path / "set.jsonl"], tmp_path / "local.jsonl", options, workers=2, chunk_size=2)
    assert untimed(tmp_path / "serial.jsonl") == untimed(tmp_path / "local.jsonl")
    assert (serial.packages, serial.failed) == (local.packages, local.failed) == (7, 2)


def test_a_file_changed_under_the_batch_is_an_error_member_not_a_wrong_package(tmp_path):
    path = tmp_path / "set.jsonl"
    mixed_set(path)
    spans = list(iter_raw_members([path], spans=True))
    path.write_bytes(path.read_bytes()[:100])  # cut short after the parent listed it
    resolved = [resolve_member(m) for m in spans]
    assert all(kind == "error" for _, kind, _ in resolved[1:])
    assert "changed while the batch was reading it" in resolved[-1][2]
    path.unlink()
    assert "cannot read the line again" in resolve_member(spans[0])[2]


def test_a_span_is_read_from_the_same_file_whatever_the_working_directory(tmp_path, monkeypatch):
    mixed_set(tmp_path / "set.jsonl")
    monkeypatch.chdir(tmp_path)
    spans = list(iter_raw_members([Path("set.jsonl")], spans=True))
    plain = list(iter_raw_members([Path("set.jsonl")]))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert [resolve_member(m) for m in spans] == plain
