"""Standard input read as a file of the same content would be: gzip decompressed, a JSONL set
read as it arrives (records come while the producer still writes), and everything within the
readers' size limits (a stream without end does not fill memory)."""

from __future__ import annotations

import gzip
import io
import json
import os
import select
import subprocess
import sys
import types

import pytest

import memaudit_fast as ma
from memaudit_fast.cli.main import main

EXAMPLE = ma.example_package_path()


def _stdin_bytes(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr("sys.stdin", types.SimpleNamespace(buffer=io.BufferedReader(io.BytesIO(data))))


def _set_lines() -> list[str]:
    package = json.loads(EXAMPLE.read_text())
    return [json.dumps(package | {"package_id": f"p{k}"}) + "\n" for k in range(3)]


def _records(out: str) -> list[dict]:
    return [{k: v for k, v in json.loads(line).items() if k != "seconds"} for line in out.splitlines()]


@pytest.mark.parametrize("kind", ["package", "set"])
def test_gzip_on_stdin_reads_as_the_gz_file_does(tmp_path, monkeypatch, capsys, kind) -> None:
    text = EXAMPLE.read_text() if kind == "package" else "".join(_set_lines())
    path = tmp_path / ("p.json.gz" if kind == "package" else "s.jsonl.gz")
    path.write_bytes(gzip.compress(text.encode()))
    assert main(["solve", str(path), "--budget", "8", "--json"]) == 0
    from_file = _records(capsys.readouterr().out)
    _stdin_bytes(monkeypatch, path.read_bytes())
    assert main(["solve", "-", "--budget", "8", "--json"]) == 0
    from_stdin = _records(capsys.readouterr().out)
    ids = [json.loads(text)["package_id"]] if kind == "package" else ["p0", "p1", "p2"]
    assert [r["package_id"] for r in from_stdin] == ids
    assert from_stdin == from_file
    _stdin_bytes(monkeypatch, path.read_bytes())
    assert main(["validate", "-"]) == 0
    assert f"{len(ids)} valid, 0 invalid" in capsys.readouterr().out


def test_a_cut_gzip_stream_on_stdin_is_bad_input_said_as_such(monkeypatch, capsys) -> None:
    whole = gzip.compress(EXAMPLE.read_bytes())
    _stdin_bytes(monkeypatch, whole[: len(whole) // 2])
    assert main(["info", "-"]) == 2
    assert "gzip stream ended" in capsys.readouterr().err


def test_a_line_that_is_not_utf8_reads_as_in_a_file(tmp_path, monkeypatch, capsys) -> None:
    lines = _set_lines()
    data = "".join(lines).encode().replace(b'"p1"', b'"p\xff1"')
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    assert main(["validate", str(path)]) == 2
    from_file = capsys.readouterr()
    _stdin_bytes(monkeypatch, data)
    assert main(["validate", "-"]) == 2
    from_stdin = capsys.readouterr()
    assert from_stdin.out == from_file.out.replace(str(path), "<stdin>")
    assert from_stdin.err == from_file.err.replace(str(path), "<stdin>")
    assert "line 2: column" in from_stdin.err and "not UTF-8" in from_stdin.err


def test_stdin_read_whole_stays_within_the_file_limit(monkeypatch, capsys) -> None:
    text = EXAMPLE.read_bytes()  # pretty-printed: many short lines, more bytes than the limit
    monkeypatch.setenv("MEMAUDIT_MAX_FILE_BYTES", str(len(text) // 2))
    _stdin_bytes(monkeypatch, text)
    assert main(["info", "-"]) == 2
    err = capsys.readouterr().err
    assert "larger than the limit" in err and "MEMAUDIT_MAX_FILE_BYTES" in err
    # A store read whole (score --store -) too.
    monkeypatch.setenv("MEMAUDIT_MAX_FILE_BYTES", "64")
    _stdin_bytes(monkeypatch, b"[" + b'"c1", ' * 100 + b'"c2"]')
    assert main(["score", str(EXAMPLE), "--budget", "8", "--store", "-"]) == 2
    assert "MEMAUDIT_MAX_FILE_BYTES" in capsys.readouterr().err


def test_a_set_line_over_the_limit_fails_alone(monkeypatch, capsys) -> None:
    lines = _set_lines()
    long = json.dumps(json.loads(lines[1]) | {"notes": "x" * 4000}) + "\n"
    monkeypatch.setenv("MEMAUDIT_MAX_FILE_BYTES", str(len(long) - 10))
    _stdin_bytes(monkeypatch, (lines[0] + long + lines[2]).encode())
    assert main(["validate", "-"]) == 2
    out, err = capsys.readouterr()
    assert "ok: <stdin> line 1" in out and "ok: <stdin> line 3" in out
    assert "<stdin> line 2" in err and "longer than the limit" in err


def _read_line(stream, timeout: float = 60.0) -> bytes:
    """One line of a child's output; empty if none came within ``timeout`` (a guard against a
    hang, not a measure of speed)."""
    ready, _, _ = select.select([stream], [], [], timeout)
    return stream.readline() if ready else b""


@pytest.mark.skipif(sys.platform == "win32", reason="select on pipes")
@pytest.mark.parametrize("command", [["solve", "-", "--budget", "8", "--json"], ["validate", "-"]])
def test_a_set_piped_in_is_worked_on_while_the_producer_still_writes(command) -> None:
    lines = _set_lines()
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with subprocess.Popen([sys.executable, "-m", "memaudit_fast", *command], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env) as child:
        assert child.stdin is not None and child.stdout is not None
        try:
            child.stdin.write((lines[0] + lines[1]).encode())
            child.stdin.flush()
            # The producer pauses with its stdin open: the first package is already done.
            first = _read_line(child.stdout)
            assert b"p0" in first, first
            child.stdin.write(lines[2].encode())
            child.stdin.close()
            rest = child.stdout.read()
            assert child.wait(timeout=60) == 0
        finally:
            child.kill()
    assert b"p1" in rest and b"p2" in rest


def test_one_line_alone_is_a_package_and_two_are_a_set(monkeypatch, capsys) -> None:
    one, two, _ = _set_lines()
    _stdin_bytes(monkeypatch, ("\n" + one + "\n\n").encode())
    assert main(["validate", "-"]) == 0
    assert "ok: <stdin> (p0)" in capsys.readouterr().out
    _stdin_bytes(monkeypatch, (one + "\n" + two).encode())
    assert main(["validate", "-"]) == 0
    out = capsys.readouterr().out
    assert "ok: <stdin> line 1 (p0)" in out and "ok: <stdin> line 3 (p1)" in out
    _stdin_bytes(monkeypatch, b"  \n\n")
    assert main(["validate", "-"]) == 2
    assert "no input on stdin" in capsys.readouterr().err


def test_a_package_spread_over_lines_is_one_package(monkeypatch, capsys) -> None:
    _stdin_bytes(monkeypatch, EXAMPLE.read_bytes().replace(b"\n", b"\r\n"))
    assert main(["validate", "-"]) == 0
    assert "ok: <stdin> (example/lisbon-porto)" in capsys.readouterr().out


@pytest.mark.parametrize("command", [["info", "-"], ["convert", "-", "OUT"]])
def test_results_or_a_set_on_stdin_where_one_package_goes_is_named_as_such(tmp_path, monkeypatch, capsys,
                                                                         command) -> None:
    argv = [str(tmp_path / "out.json") if a == "OUT" else a for a in command]
    assert main(["solve", str(EXAMPLE), "--budgets", "4,8", "--json"]) == 0
    results = capsys.readouterr().out.encode()
    cases = [
        (results, "memaudit.result/1 records (a results file)"),  # several records
        (results.splitlines(keepends=True)[0], "a result record"),  # one record
        ("".join(_set_lines()).encode(), "a package set (3 lines)"),
    ]
    for data, said in cases:
        _stdin_bytes(monkeypatch, data)
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err
    assert not (tmp_path / "out.json").exists()
