"""memaudit import / score-store, end to end on the example package."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
from pathlib import Path

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.model.examples import example_package_path
from memaudit_fast.systems import diagnostics
from oracles.exports import (
    ENGRAM_RECORDS,
    GET_ALL,
    HISTORY_ROWS,
    LETTA,
    MEM0_HISTORY_DDL,
    NOTES,
)
from oracles.objective import brute_solver

EXAMPLE = example_package_path()


@pytest.fixture
def exports(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "get_all.json").write_text(json.dumps(GET_ALL))
    con = sqlite3.connect(tmp_path / "history.db")
    con.execute(MEM0_HISTORY_DDL)
    con.executemany("INSERT INTO history VALUES (?,?,?,?,?,?,?,?,?,?)", HISTORY_ROWS)
    con.commit()
    con.close()
    (tmp_path / "letta.json").write_text(json.dumps(LETTA))
    (tmp_path / "notes.json").write_text(json.dumps(NOTES))
    (tmp_path / "engram.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ENGRAM_RECORDS))
    return {name: tmp_path / name for name in ("get_all.json", "history.db", "letta.json", "notes.json",
                                               "engram.jsonl")}


@pytest.fixture(autouse=True)
def reference_solver(monkeypatch: pytest.MonkeyPatch) -> None:
    if importlib.util.find_spec("memaudit_fast.solve.exact") is None:
        monkeypatch.setattr(diagnostics, "exact_solver", brute_solver)


def test_imports_accumulate_and_score(exports: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    u1, u2, u3 = (tmp_path / f"u{k}.json" for k in (1, 2, 3))
    common = ["--embedder", "hashing", "--cache", str(tmp_path / "cache.sqlite")]
    assert main(["import", "mem0", str(exports["get_all.json"]), "--history", str(exports["history.db"]),
                 "--package", str(EXAMPLE), "--out", str(u1), *common]) == 0
    assert "imported 4 mem0 memories (2 active, 1 deleted, 1 superseded)" in capsys.readouterr().out
    assert main(["import", "letta", str(exports["letta.json"]), "--labels", "human",
                 "--package", str(u1), "--out", str(u2), *common]) == 0
    assert main(["import", "amem", str(exports["notes.json"]), "--view", "content",
                 "--package", str(u2), "--out", str(u3), *common]) == 0
    union = json.loads(u3.read_text())
    assert list(union["meta"]["systems"]) == ["mem0", "letta", "amem"]
    capsys.readouterr()

    assert main(["score-store", str(u3), "--system", "mem0,amem", "--budgets", "8,32", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["budget"] for r in lines] == [8, 32]
    for rec in lines:
        assert rec["format"] == "memaudit.result/1" and set(rec["systems"]) == {"mem0", "amem"}
        for block in rec["systems"].values():
            assert block["upper_pruned_value"] <= rec["opt"] + 1e-9
            assert block["upper_pruned_greedy_value"] <= block["upper_pruned_value"] + 1e-9
    tight = lines[0]["systems"]["mem0"]
    assert tight["full_store_ratio"] == 0.0 and "above the budget 8" in tight["reasons"]["full_store_ratio"]

    assert main(["score-store", str(u3), "--budgets", "16"]) == 0
    table = capsys.readouterr().out
    assert "OPT(union)" in table and "letta" in table and "note: mem0 @ 16" in table


def test_import_errors_are_reported_with_exit_code_2(exports: dict[str, Path], tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"results": [{"id": "x"}]}))
    out = tmp_path / "u.json"
    code = main(["import", "mem0", str(bad), "--package", str(EXAMPLE), "--out", str(out), "--embedder", "hashing"])
    err = capsys.readouterr().err
    assert code == 2 and "results[0]" in err and "'memory'" in err and not out.exists()
    assert main(["import", "amem", str(exports["notes.json"]), "--history", "h.db",
                 "--package", str(EXAMPLE), "--out", str(out)]) == 2
    assert "--history applies to mem0" in capsys.readouterr().err
    assert main(["import", "engram", str(exports["engram.jsonl"]), "--package", str(EXAMPLE),
                 "--out", str(out), "--embedder", "hashing", "--thresholds", "0.5"]) == 2
    assert "two numbers FULL,PARTIAL" in capsys.readouterr().err
    assert main(["import", "engram", str(exports["engram.jsonl"]), "--package", str(EXAMPLE),
                 "--out", str(out), "--embedder", "hashing", "--thresholds", "0.6,0.4", "--no-cache"]) == 0
    assert not (tmp_path / ".memaudit-arbiter.sqlite").exists()
    union = json.loads(out.read_text())
    assert union["meta"]["systems"]["engram"]["arbiter"]["calibration"]["method"] == "given"
    # Refuses to overwrite without --force, and to import the same name twice.
    assert main(["import", "engram", str(exports["engram.jsonl"]), "--package", str(out),
                 "--out", str(out), "--embedder", "hashing"]) == 2
    out2 = tmp_path / "u2.json"
    assert main(["import", "engram", str(exports["engram.jsonl"]), "--package", str(out),
                 "--out", str(out2), "--embedder", "hashing"]) == 2
    assert "already holds a system named 'engram'" in capsys.readouterr().err
