"""memaudit import: Mem0 histories out of time order, and exports piped in as '-'.

- an UPDATE/DELETE dated before the ADD of its memory is refused, naming both rows (replayed,
  it would leave the older text active and mark the newer one superseded);
- '-' reads the export (mem0, letta, amem) from standard input, and '-' given for two inputs
  at once is refused.
"""

from __future__ import annotations

import gzip
import io
import json
import sqlite3
import types
from pathlib import Path
from typing import Any

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.errors import PackageError, UsageError
from memaudit_fast.model.examples import example_package_path
from memaudit_fast.systems import read_mem0, read_system
from oracles.exports import GET_ALL, HISTORY_ROWS, LETTA, MEM0_HISTORY_DDL, NOTES

EXAMPLE = example_package_path()

ADD = {"memory_id": "m1", "old_memory": None, "new_memory": "Vik has taken up running", "event": "ADD",
       "created_at": "2024-01-01T00:00:00Z", "is_deleted": 0}
UPDATE = {"memory_id": "m1", "old_memory": "Vik has taken up running", "new_memory": "Vik runs every day",
          "event": "UPDATE", "created_at": "2023-01-02T00:00:00Z", "is_deleted": 0}
DELETE = {"memory_id": "m1", "old_memory": "Vik has taken up running", "new_memory": None,
          "event": "DELETE", "created_at": "2023-01-02T00:00:00Z", "is_deleted": 1}


def import_cli(tmp_path: Path, system: str, export: str, *extra: str, package: str = str(EXAMPLE)) -> int:
    return main(["import", system, export, "--package", package, "--out", str(tmp_path / "u.json"),
                 "--embedder", "hashing", "--thresholds", "0.6,0.4", "--no-cache", *extra])


def pipe(monkeypatch: pytest.MonkeyPatch, data: bytes | str) -> None:
    raw = data.encode() if isinstance(data, str) else data
    monkeypatch.setattr("sys.stdin", types.SimpleNamespace(buffer=io.BufferedReader(io.BytesIO(raw))))


def union_texts(tmp_path: Path) -> dict[str, str]:
    data = json.loads((tmp_path / "u.json").read_text())
    return {c["text"]: c.get("status", "") for c in data["candidates"] if "Vik" in c["text"]}


# ------------------------------------------------- 1. rows out of time order


@pytest.mark.parametrize("change", [UPDATE, DELETE], ids=["update", "delete"])
@pytest.mark.parametrize("with_get_all", [False, True])
def test_change_dated_before_its_add_is_refused_naming_both_rows(tmp_path: Path, change: dict[str, Any],
                                                                 with_get_all: bool) -> None:
    history = tmp_path / "h.json"
    history.write_text(json.dumps([change, ADD]))  # listed first, and dated a year earlier
    get_all = None
    if with_get_all:
        get_all = tmp_path / "get_all.json"
        get_all.write_text(json.dumps({"results": [{"id": "m1", "memory": "Vik runs every day"}]}))
    with pytest.raises(PackageError) as err:
        read_mem0(get_all, history=history)
    message = str(err.value)
    assert err.value.source == str(history) and err.value.record == "record [0]"
    assert err.value.field == "created_at"
    assert "record [1]" in message and "'m1'" in message and change["event"] in message
    assert "2023-01-02" in message and "2024-01-01" in message


def test_change_dated_before_its_add_exits_2_on_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    history = tmp_path / "h.json"
    history.write_text(json.dumps([UPDATE, ADD]))
    assert import_cli(tmp_path, "mem0", str(history)) == 2
    err = capsys.readouterr().err
    assert "h.json" in err and "record [0]" in err and "record [1]" in err
    assert not (tmp_path / "u.json").exists()


def test_change_at_the_same_time_listed_before_its_add_is_refused(tmp_path: Path) -> None:
    history = tmp_path / "h.json"
    history.write_text(json.dumps([{**UPDATE, "created_at": ADD["created_at"]}, ADD]))
    with pytest.raises(PackageError, match="same time"):
        read_mem0(None, history=history)


def test_rows_listed_out_of_order_but_dated_in_order_are_replayed_by_time(tmp_path: Path) -> None:
    # Mem0 orders a history by time: a table listing the update first is still read right.
    history = tmp_path / "h.json"
    history.write_text(json.dumps([{**UPDATE, "created_at": "2024-02-01T00:00:00Z"}, ADD]))
    export = read_mem0(None, history=history)
    by_status = {m.status: m.text for m in export.memories}
    assert by_status["active"] == "Vik runs every day"
    assert "Vik has taken up running -> Vik runs every day" in by_status["superseded"]


# ------------------------------------------------- 2. '-' reads standard input


def test_mem0_get_all_from_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pipe(monkeypatch, json.dumps(GET_ALL))
    assert import_cli(tmp_path, "mem0", "-") == 0
    data = json.loads((tmp_path / "u.json").read_text())
    assert data["meta"]["systems"]["mem0"]["memories"] == len(GET_ALL["results"])


def test_mem0_history_rows_from_stdin_as_jsonl_and_gzip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    later = {**UPDATE, "created_at": "2024-02-01T00:00:00Z"}
    pipe(monkeypatch, gzip.compress("".join(json.dumps(r) + "\n" for r in (ADD, later)).encode()))
    assert import_cli(tmp_path, "mem0", "-") == 0
    texts = union_texts(tmp_path)
    assert "Vik runs every day" in texts


def test_mem0_sqlite_history_from_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "history.db"
    con = sqlite3.connect(db)
    con.execute(MEM0_HISTORY_DDL)
    con.executemany("INSERT INTO history VALUES (?,?,?,?,?,?,?,?,?,?)", HISTORY_ROWS)
    con.commit()
    con.close()
    from_file = read_mem0(db)
    pipe(monkeypatch, db.read_bytes())
    from_stdin = read_mem0("-")
    assert [(m.memory_id, m.text, m.status) for m in from_stdin.memories] == \
        [(m.memory_id, m.text, m.status) for m in from_file.memories]


def test_out_of_order_history_from_stdin_is_named_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    pipe(monkeypatch, json.dumps([UPDATE, ADD]))
    assert import_cli(tmp_path, "mem0", "-") == 2
    assert "<stdin>: record [0]" in capsys.readouterr().err


def test_letta_and_amem_from_stdin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pipe(monkeypatch, json.dumps(LETTA))
    assert import_cli(tmp_path, "letta", "-") == 0
    pipe(monkeypatch, json.dumps(NOTES))
    assert import_cli(tmp_path, "amem", "-", "--force") == 0
    data = json.loads((tmp_path / "u.json").read_text())
    assert data["meta"]["systems"]["amem"]["memories"] > 0


@pytest.mark.parametrize("extra", [("--package", "-"), ("--history", "-")])
def test_dash_for_two_inputs_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str], extra: tuple[str, str]) -> None:
    pipe(monkeypatch, json.dumps(GET_ALL))
    args = ["import", "mem0", "-", "--out", str(tmp_path / "u.json"), "--no-cache"]
    if extra[0] != "--package":
        args += ["--package", str(EXAMPLE)]
    assert main([*args, *extra]) == 2
    err = capsys.readouterr().err
    assert f"EXPORT and {extra[0]} are each '-'" in err and "standard input holds one file" in err


def test_dash_for_export_and_history_is_refused_in_the_api() -> None:
    with pytest.raises(UsageError, match="export and history are both '-'"):
        read_system("mem0", "-", history="-")
