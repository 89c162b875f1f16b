"""Results files: export and report read them through one validation, and a file holding
packages or results given to convert is named for what it is."""

from __future__ import annotations

import json

import pytest

from memaudit_fast.cli.main import main


def solved(budget: float = 4) -> dict:
    return {"format": "memaudit.result/1", "package_id": "small/base/s0", "budget": budget, "opt": 2.5,
            "upper_bound": 2.5, "gap": 0.0, "status": "optimal", "proven_optimal": True, "selected": ["c1"],
            "cost": 2, "nodes": 3, "seconds": 0.01,
            "writers": {"gvt": {"value": 2.0, "ratio": 0.8, "selected": ["c1"], "cost": 2.0}}}


def failed() -> dict:
    # As a batch writes it: no opt, no selected, the id and budget unknown.
    return {"format": "memaudit.result/1", "package_id": None, "source": "set.jsonl line 9", "budget": None,
            "status": "error", "proven_optimal": False, "error": "not valid JSON",
            "member_digest": "ab", "options_digest": "cd"}


def write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


BAD = [
    ("opt", "12"), ("budget", "4"), ("writers", []), ("status", "great"), ("package_id", None),
    ("opt", None), ("selected", "c1"),
]


@pytest.mark.parametrize(("field", "value"), BAD)
@pytest.mark.parametrize("command", ["export", "report"])
def test_a_bad_field_is_refused_naming_file_line_and_field(tmp_path, capsys, command, field, value):
    bad = solved(8)
    if value is None:
        del bad[field]
    else:
        bad[field] = value
    results = write(tmp_path / "r.jsonl", [solved(), bad])
    out = tmp_path / ("o.csv" if command == "export" else "rep")
    argv = [command, str(results), str(out)] if command == "export" else [command, str(results), "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{results}: line 2: field {field!r}" in err
    assert "expected" in err
    assert not out.exists()


def test_the_allowed_statuses_are_named(tmp_path, capsys):
    results = write(tmp_path / "r.jsonl", [dict(solved(), status="great")])
    assert main(["export", str(results), str(tmp_path / "o.csv")]) == 2
    assert "optimal, time_limit, node_limit, interrupted, error" in capsys.readouterr().err


def test_error_records_and_extra_fields_are_accepted(tmp_path):
    extra = dict(solved(), member_digest="x", options_digest="y", options={"a": 1}, source="s line 1",
                 size={"candidates": 3, "groups": 1, "units": 2, "nonzeros": 4}, distribution="base",
                 budget_frac=0.1, certificate={"solver": "highs", "status": "optimal", "agrees": True})
    results = write(tmp_path / "r.jsonl", [solved(), extra, failed()])
    assert main(["export", str(results), str(tmp_path / "o.csv"), "-q"]) == 0
    assert main(["report", str(results), "--out", str(tmp_path / "rep")]) == 0


def test_what_the_project_writes_still_exports_and_reports(tmp_path):
    pkgs = tmp_path / "set.jsonl"
    assert main(["generate", "--distribution", "base", "--seed", "0", "--count", "2", "--out", str(pkgs)]) == 0
    with pkgs.open("a") as handle:
        handle.write("{oops\n")  # a member that fails: an error record
    results = tmp_path / "b.jsonl"
    assert main(["batch", str(pkgs), "--out", str(results), "--writers", "gvt,greedy", "--budget-fracs", "0.1,0.2",
                 "--quiet"]) == 3
    assert main(["export", str(results), str(tmp_path / "b.csv"), "-q"]) == 0
    assert main(["report", str(results), "--out", str(tmp_path / "rep")]) == 0


def test_convert_names_a_package_set_and_a_results_file(tmp_path, capsys):
    pkgs = tmp_path / "set8.jsonl"
    assert main(["generate", "--distribution", "base", "--seed", "0", "--count", "3", "--out", str(pkgs)]) == 0
    capsys.readouterr()
    assert main(["convert", str(pkgs), str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert "package set" in err and "takes one package" in err and "name it .jsonl" not in err
    results = write(tmp_path / "res.jsonl", [solved(), solved(8)])
    assert main(["convert", str(results), str(tmp_path / "x.json")]) == 2
    err = capsys.readouterr().err
    assert "results file" in err and "memaudit export" in err and "name it .jsonl" not in err
    assert not (tmp_path / "x.json").exists()
