"""MEMAUDIT_MAX_SET_BYTES: the line within which a set passes the cap is refused with its own
line number, and the lines after it are not read; MEMAUDIT_MAX_FILE_BYTES caps each line."""

from __future__ import annotations

import io
import json

import pytest

from memaudit_fast.model.lines import iter_stream_lines
from memaudit_fast.model.sets import iter_set_entries
from memaudit_fast.suites.small import generate_package


@pytest.fixture(scope="module")
def small() -> bytes:
    return json.dumps(generate_package("base", seed=0), separators=(",", ":")).encode() + b"\n"


def big(small: bytes, pad: int) -> bytes:
    data = json.loads(small)
    data["meta"]["pad"] = "x" * pad
    return json.dumps(data, separators=(",", ":")).encode() + b"\n"


def labels(entries) -> list[tuple[str, bool]]:
    return [(e.label.rsplit(" ", 1)[-1], e.package is not None) for e in entries]


def test_line_longer_than_the_set_cap_is_refused_itself(tmp_path, monkeypatch, small):
    path = tmp_path / "big.jsonl"
    path.write_bytes(big(small, 200_000) + small + small)
    monkeypatch.setenv("MEMAUDIT_MAX_SET_BYTES", "100000")
    entries = list(iter_set_entries([path]))
    assert labels(entries) == [("1", False)]
    message = str(entries[0].error)
    assert "line 1" in message and "100000" in message and "MEMAUDIT_MAX_SET_BYTES" in message


def test_line_that_crosses_the_set_cap_is_refused(tmp_path, monkeypatch, small):
    path = tmp_path / "s.jsonl"
    path.write_bytes(small + small + small)
    monkeypatch.setenv("MEMAUDIT_MAX_SET_BYTES", str(2 * len(small) + 10))
    entries = list(iter_set_entries([path]))
    assert labels(entries) == [("1", True), ("2", True), ("3", False)]
    assert "MEMAUDIT_MAX_SET_BYTES" in str(entries[2].error)


def test_set_exactly_at_the_cap_is_read(tmp_path, monkeypatch, small):
    path = tmp_path / "s.jsonl"
    path.write_bytes(small + small)
    monkeypatch.setenv("MEMAUDIT_MAX_SET_BYTES", str(2 * len(small)))
    assert labels(iter_set_entries([path])) == [("1", True), ("2", True)]


def test_line_cap_below_the_set_cap_skips_only_that_line(tmp_path, monkeypatch, small):
    path = tmp_path / "s.jsonl"
    path.write_bytes(big(small, 200_000) + small)
    monkeypatch.setenv("MEMAUDIT_MAX_SET_BYTES", "10000000")
    monkeypatch.setenv("MEMAUDIT_MAX_FILE_BYTES", "100000")
    entries = list(iter_set_entries([path]))
    assert labels(entries) == [("1", False), ("2", True)]
    assert "MEMAUDIT_MAX_FILE_BYTES" in str(entries[0].error)


def test_both_caps_passed_within_one_line(tmp_path, monkeypatch, small):
    path = tmp_path / "s.jsonl"
    path.write_bytes(big(small, 3_000_000) + small)
    monkeypatch.setenv("MEMAUDIT_MAX_SET_BYTES", "2000000")
    monkeypatch.setenv("MEMAUDIT_MAX_FILE_BYTES", "100000")
    entries = list(iter_set_entries([path]))
    assert labels(entries) == [("1", False)]
    message = str(entries[0].error)
    assert "MEMAUDIT_MAX_FILE_BYTES" in message and "MEMAUDIT_MAX_SET_BYTES" in message


def test_stream_lines_never_hold_more_than_the_set_cap():
    stream = io.BytesIO(b"x" * 5000 + b"\nok\n")
    out = list(iter_stream_lines(stream, "<stdin>", line_cap=1 << 20, stream_cap=1000))
    assert len(out) == 1 and out[0][0] == 1 and "1000 bytes" in str(out[0][1])
