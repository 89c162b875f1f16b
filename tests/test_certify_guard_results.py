"""certify reads results as export and report do (one check, results.records.validate_record):
a bad record is bad input (exit 2, file, line and field named, nothing certified); an error
record, also one whose package id is null, is skipped and counted (exit 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memaudit_fast.cli.main import main

PACKAGE = {
    "format": "memaudit.package/1", "package_id": "p", "budgets": [1],
    "units": [{"unit_id": "u0"}, {"unit_id": "u1"}],
    "candidates": [{"candidate_id": "a", "cost": 1, "coverage": {"u0": 1}},
                   {"candidate_id": "b", "cost": 1, "coverage": {"u1": 1}}],
    "queries": [{"query_id": "q0", "required_unit_ids": ["u0"]},
                {"query_id": "q1", "required_unit_ids": ["u1"]},
                {"query_id": "q2", "required_unit_ids": ["u1"]}],
}


@pytest.fixture
def files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Path]:
    """A batch's own results for a set of the package and a line that is not JSON, and the
    package alone."""
    package = tmp_path / "p.json"
    package.write_text(json.dumps(PACKAGE), encoding="utf-8")
    members = tmp_path / "set.jsonl"
    members.write_text(json.dumps(PACKAGE) + "\nnot json\n", encoding="utf-8")
    results = tmp_path / "res.jsonl"
    assert main(["batch", str(members), "--out", str(results), "--quiet", "--finish", "none"]) == 3
    capsys.readouterr()
    return {"package": package, "results": results}


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_a_batchs_error_record_with_a_null_id_is_skipped_and_counted(files, capsys):
    _, failed = _records(files["results"])
    assert failed["status"] == "error" and failed["package_id"] is None  # what batch writes
    args = ["certify", str(files["results"]), "--package", str(files["package"]), "--solver", "highs"]
    assert main(args) == 3  # it said: field 'package_id': expected the package id as a string (exit 2)
    captured = capsys.readouterr()
    assert "1 results: 1 certified, 0 failed, 0 unverified" in captured.err
    assert "1 error record skipped" in captured.err
    assert main([*args, "--json"]) == 3
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert out[0]["certificate"]["agrees"] is True
    assert out[1]["package_id"] is None
    assert out[1]["certificate"]["status"] == "not_certified" and out[1]["certificate"]["agrees"] is None
    assert "nothing to certify" in out[1]["certificate"]["issues"][0]
    # export and report take the same file
    assert main(["export", str(files["results"]), str(files["results"].with_suffix(".csv"))]) == 0


def test_a_file_of_error_records_only_certifies_nothing_and_says_so(files, tmp_path, capsys):
    _, failed = _records(files["results"])
    only = _write(tmp_path / "errors.jsonl", [failed, {**failed, "package_id": "p", "budget": 1}])
    assert main(["certify", str(only), "--package", str(files["package"]), "--solver", "highs"]) == 3
    err = capsys.readouterr().err
    assert "0 results: 0 certified" in err and "2 error records skipped" in err


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("status", "bogus", "expected one of optimal"),
    ("status", None, "missing"),
    ("proven_optimal", "s", "expected true or false"),
    ("budget", -1, "expected a number >= 0"),
    ("budget", "s", "expected a number >= 0"),
    ("opt", "s", "expected the value of the store found"),
    ("opt", None, "missing"),
    ("upper_bound", "s", "expected a number"),
    ("selected", "b", "a list of candidate id strings"),
    ("package_id", None, "the package's id"),
    ("package_id", "", "the package's id"),
    ("group_capacity", 1.5, "an integer"),
])
def test_a_bad_record_is_bad_input_naming_file_line_and_field(files, tmp_path, capsys, field, value, expected):
    solved, _ = _records(files["results"])
    bad = {**solved}
    if value is None and field != "package_id":
        del bad[field]
    else:
        bad[field] = value
    path = _write(tmp_path / "bad.jsonl", [solved, bad])
    models = tmp_path / "models"
    code = main(["certify", str(path), "--package", str(files["package"]), "--solver", "highs",
                 "--write-model", str(models), "--json"])
    captured = capsys.readouterr()
    assert code == 2  # it certified bogus statuses (0) and called bad numbers a failed certificate (3)
    assert captured.out == ""  # nothing certified, not even the good first line
    assert f"bad.jsonl: line 2: field '{field}': " in captured.err
    assert expected in captured.err
    for internals in ("could not convert", "Traceback", "internal error", "malformed"):
        assert internals not in captured.err
    assert not models.exists()
    # export refuses the same record, with the same words
    assert main(["export", str(path), str(tmp_path / "out.csv")]) == 2
    assert f"field '{field}'" in capsys.readouterr().err
    assert not (tmp_path / "out.csv").exists()


def test_results_that_are_not_records_are_refused_as_before(files, tmp_path, capsys):
    package = str(files["package"])
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n", encoding="utf-8")
    assert main(["certify", str(empty), "--package", package]) == 2
    assert "holds no memaudit.result/1 records" in capsys.readouterr().err
    text = files["results"].read_text(encoding="utf-8")
    cut = tmp_path / "cut.jsonl"
    cut.write_text(text[: text.index("\n") + 20], encoding="utf-8")  # a batch killed while writing
    assert main(["certify", str(cut), "--package", package]) == 2
    assert "line 2: the last line is cut off" in capsys.readouterr().err
    assert main(["certify", package, "--package", package]) == 2  # a package, not results
    assert "holds packages" in capsys.readouterr().err


def test_a_line_separator_inside_a_string_is_not_a_line_break(files, tmp_path, capsys):
    solved, _ = _records(files["results"])
    path = _write(tmp_path / "r.jsonl", [{**solved, "source": "a\u2028b"}])
    path.write_text(path.read_text(encoding="utf-8").replace("\\u2028", "\u2028"), encoding="utf-8")
    assert main(["certify", str(path), "--package", str(files["package"]), "--solver", "highs"]) == 0
    assert "1 results: 1 certified" in capsys.readouterr().err
