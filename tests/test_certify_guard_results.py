"""certify reads results as export and report do (one check, results.records.validate_record):
a bad record is bad input (exit 2, file, line and field named, nothing certified); an error
record, also one whose package id is null, is skipped and counted (exit 3). And solve
--certify --write-model over several budgets and packages writes its models all or nothing,
as certify does."""

from __future__ import annotations

import errno
import importlib
import json
import os
from pathlib import Path

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.errors import SolverError
from memaudit_fast.solve.milp import model_stem

certify_module = importlib.import_module("memaudit_fast.solve.certify")
model_files = importlib.import_module("memaudit_fast.solve.model_files")

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


# solve --certify --write-model: one directory per run, all or nothing


def _solve_package(tmp_path: Path, package_id: str) -> str:
    path = tmp_path / f"{package_id}.json"
    path.write_text(json.dumps({**PACKAGE, "package_id": package_id, "budgets": [1, 2]}), encoding="utf-8")
    return str(path)


def _listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


def _solve(paths: list[str], out: Path, *more: str) -> int:
    return main(["solve", *paths, "--certify", "highs", "--finish", "none", "--write-model", str(out), "--json",
                 *more])


def test_a_later_budgets_name_blocks_the_run_before_anything_is_solved(tmp_path, capsys):
    out = tmp_path / "models"
    out.mkdir()
    blocker = out / f"{model_stem('a', 2.0)}.lp"
    blocker.write_text("the user's own\n")
    assert _solve([_solve_package(tmp_path, "a")], out) == 2
    captured = capsys.readouterr()
    assert f"--write-model {out}: {blocker.name} exists already" in captured.err
    assert captured.out == ""  # the names are checked before the package is solved
    assert _listing(out) == [blocker.name]  # the B1 model was left behind before
    assert blocker.read_text() == "the user's own\n"


def test_a_later_packages_name_takes_away_the_earlier_packages_models(tmp_path, capsys):
    out = tmp_path / "new" / "models"
    first, second = _solve_package(tmp_path, "a"), _solve_package(tmp_path, "b")
    out.mkdir(parents=True)
    blocker = out / f"{model_stem('b', 2.0)}.mps"
    blocker.write_text("x")
    assert _solve([first, second], out) == 2
    assert _listing(out) == [blocker.name]  # a's six files are gone again
    capsys.readouterr()
    blocker.unlink()
    out.rmdir()
    out.parent.rmdir()
    assert _solve([first, second], out) == 0  # a rerun is not blocked by the failed run's files
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    named = {Path(f["path"]).name for r in records for m in r["certificate"]["model_files"] for f in m["files"]}
    assert len(records) == 4 and len(_listing(out)) == 12
    assert named <= set(_listing(out))


def test_a_package_id_given_twice_is_refused_and_nothing_is_left(tmp_path, capsys):
    out = tmp_path / "models"
    path = _solve_package(tmp_path, "a")
    assert _solve([path, path], out) == 2  # the second's certificate would name the first's files
    err = capsys.readouterr().err
    assert f"package 'a' needs the model {model_stem('a', 1.0)}, which an earlier package of this run wrote" in err
    assert not out.exists()


@pytest.mark.parametrize("fail_at", [1, 2, 3])
def test_a_full_disk_at_a_later_budget_or_package_leaves_nothing(tmp_path, capsys, monkeypatch, fail_at):
    out = tmp_path / "new" / "models"
    real = model_files.write_milp
    calls: list[str] = []

    def full_disk(model, c, directory, stem, *args):
        calls.append(stem)
        if len(calls) > fail_at:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(Path(directory) / f"{stem}.mps"))
        return real(model, c, directory, stem, *args)

    monkeypatch.setattr(model_files, "write_milp", full_disk)
    paths = [_solve_package(tmp_path, "a"), _solve_package(tmp_path, "b")]
    assert _solve(paths, out) == 2
    assert "(the disk is full)" in capsys.readouterr().err
    assert not out.exists() and not out.parent.exists()  # the directories this run made, too


def test_a_package_that_fails_while_certified_takes_its_models_away(tmp_path, capsys, monkeypatch):
    out = tmp_path / "models"
    real = certify_module._run
    calls: list[int] = []

    def solver_fails_on_b(models, solver, time_limit):
        calls.append(1)
        if len(calls) == 4:  # b's second budget: b's first model is written by then
            raise SolverError("the MILP solver stopped")
        return real(models, solver, time_limit)

    monkeypatch.setattr(certify_module, "_run", solver_fails_on_b)
    assert _solve([_solve_package(tmp_path, "a"), _solve_package(tmp_path, "b")], out) == 3
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["status"] for r in records] == ["optimal", "optimal", "error"]
    named = {Path(f["path"]).name for r in records[:2] for m in r["certificate"]["model_files"]
             for f in [*m["files"], m["columns"]]}
    assert set(_listing(out)) == named  # a's models, named by a's certificates; none of b's
    assert all(name.startswith("a__B") for name in named)


def test_ctrl_c_between_a_models_files_keeps_the_whole_models_only(tmp_path, capsys, monkeypatch):
    out = tmp_path / "models"
    real = model_files._move_new
    moved: list[Path] = []

    def interrupted(src, dst):
        moved.append(dst)
        if len(moved) == 5:  # the second model's second file
            raise KeyboardInterrupt
        return real(src, dst)

    monkeypatch.setattr(model_files, "_move_new", interrupted)
    assert _solve([_solve_package(tmp_path, "a")], out) == 130
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert records[1]["certificate"]["status"] == "interrupted"
    named = {Path(f["path"]).name for m in records[0]["certificate"]["model_files"]
             for f in [*m["files"], m["columns"]]}
    assert set(_listing(out)) == named  # B1's three files, kept; B2's one file, gone
