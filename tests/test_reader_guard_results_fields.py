"""Results readers (export, report, read_results, the data frames) share one check: every known
field of a record has its type (batch's digests and options included), and an error record may
lack its package_id as it may hold null there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import memaudit_fast as ma
from memaudit_fast.cli.main import main
from memaudit_fast.errors import PackageError

pytest.importorskip("pyarrow")

SOLVED: dict[str, Any] = {
    "format": "memaudit.result/1", "package_id": "p", "budget": 1, "saturation": "cap1",
    "weights_rule": "explicit", "opt": 1.0, "upper_bound": 1.0, "gap": 0.0, "status": "optimal",
    "proven_optimal": True, "selected": ["a"], "cost": 1, "nodes": 1, "seconds": 0.001,
    "member_digest": "88f7cf3c97951401b726b120007b701b", "options_digest": "4089793374cc3e43",
    "options": {"budgets": None},
}
FAILED: dict[str, Any] = {"format": "memaudit.result/1", "status": "error", "error": "boom", "budget": None}


def results(tmp_path: Path, *records: dict[str, Any]) -> Path:
    path = tmp_path / "res.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.mark.parametrize(("field", "value"), [
    ("member_digest", []), ("member_digest", {}), ("options_digest", [1]), ("options_digest", 5),
    ("options", "x"), ("options", []), ("ablation", 3),
    ("group_capacity", 0), ("group_capacity", -2), ("budget", 2**60),
])
def test_known_field_of_wrong_type_is_refused_alike(tmp_path, capsys, field, value):
    path = results(tmp_path, {**SOLVED, field: value})
    assert main(["export", str(path), str(tmp_path / "out.csv")]) == 2
    assert main(["report", str(path), "--out", str(tmp_path / "rep")]) == 2
    err = capsys.readouterr().err
    assert err.count(f"line 1: field '{field}'") == 2 and "internal error" not in err
    assert not (tmp_path / "out.csv").exists() and not (tmp_path / "rep").exists()
    with pytest.raises(PackageError, match=f"field '{field}'"):
        ma.read_results(path)
    with pytest.raises(PackageError, match=f"field '{field}'"):
        ma.results_to_table([{**SOLVED, field: value}])


def test_error_record_with_a_wrong_digest_is_refused(tmp_path, capsys):
    path = results(tmp_path, SOLVED, {**FAILED, "member_digest": ["x"]})
    assert main(["export", str(path), str(tmp_path / "out.csv")]) == 2
    assert "line 2: field 'member_digest': found a list of 1" in capsys.readouterr().err


def test_well_typed_fields_are_kept(tmp_path):
    path = results(tmp_path, SOLVED, {**SOLVED, "member_digest": None, "options": None})
    table = ma.read_results(path, arrow=True)
    assert table.num_rows == 2


@pytest.mark.parametrize("record", [FAILED, {**FAILED, "package_id": None}, {k: v for k, v in FAILED.items() if k != "budget"}])
def test_error_record_may_lack_package_id(tmp_path, capsys, record):
    path = results(tmp_path, record)
    assert main(["export", str(path), str(tmp_path / "out.csv")]) == 0
    assert main(["report", str(path), "--out", str(tmp_path / "rep")]) == 0
    frame = ma.read_results(path)
    assert list(frame["status"]) == ["error"] and frame["package_id"].isna().all()


@pytest.mark.parametrize("package_id", [None, "", 5])
def test_solved_record_still_needs_its_package_id(tmp_path, capsys, package_id):
    record = {**SOLVED, "package_id": package_id}
    path = results(tmp_path, record)
    assert main(["export", str(path), str(tmp_path / "out.csv")]) == 2
    assert "field 'package_id'" in capsys.readouterr().err
    del record["package_id"]
    path = results(tmp_path, record)
    assert main(["export", str(path), str(tmp_path / "out.csv")]) == 2
    assert "field 'package_id': missing" in capsys.readouterr().err
