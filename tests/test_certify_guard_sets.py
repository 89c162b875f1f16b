"""certify --package SET with invalid members, and one ``agrees`` for a result no MILP value was
obtained for, whichever command certified it."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.errors import CertificationError, UsageError
from memaudit_fast.model.package import Package
from memaudit_fast.solve.exact import solve

certify_module = importlib.import_module("memaudit_fast.solve.certify")


def _package(package_id: str = "p") -> Package:
    return Package.from_dict({
        "format": "memaudit.package/1", "package_id": package_id, "budgets": [2, 4],
        "units": [{"unit_id": "u0", "weight": 1}, {"unit_id": "u1", "weight": 2}],
        "candidates": [{"candidate_id": f"c{i}", "group": f"g{i}", "cost": 1 + i,
                        "coverage": {f"u{i % 2}": 1.0}} for i in range(3)],
    })


def _results(tmp_path: Path, records: list[dict]) -> str:
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return str(path)


def _set(tmp_path: Path, lines: list[str]) -> str:
    path = tmp_path / "set.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


GOOD = json.dumps(_package().data)
OTHER = json.dumps(_package("q").data)
NO_UNITS = json.dumps({k: v for k, v in _package("r").data.items() if k != "units"})


@pytest.mark.parametrize(("lines", "bad"), [
    ([GOOD, "{not json"], ["line 2"]),
    (["{not json", GOOD], ["line 1"]),
    ([GOOD, NO_UNITS], ["line 2"]),
    ([OTHER, GOOD, "[1, 2]", NO_UNITS], ["line 3", "line 4"]),
])
def test_invalid_members_are_named_and_nothing_is_certified(tmp_path, capsys, lines, bad):
    results = _results(tmp_path, [r.to_record() for r in solve(_package(), budgets=[2, 4])])
    package_set = _set(tmp_path, lines)
    for args in ([], ["--json"], ["--write-model", str(tmp_path / "models")]):
        assert main(["certify", results, "--package", package_set, "--solver", "highs", *args]) == 2
        out, err = capsys.readouterr()
        assert out == ""
        for label in bad:
            assert f"invalid: {package_set} {label}: " in err
        assert f"memaudit certify: error: --package {package_set}: " in err and "nothing was certified" in err
        assert not (tmp_path / "models").exists()
    assert main(["validate", package_set, "--quiet"]) == 2  # the same members, the same exit code
    capsys.readouterr()


def test_a_valid_set_still_certifies(tmp_path, capsys):
    results = _results(tmp_path, [r.to_record() for r in solve(_package(), budgets=[2, 4])])
    assert main(["certify", results, "--package", _set(tmp_path, [OTHER, GOOD]), "--solver", "highs"]) == 0
    assert "2 results: 2 certified, 0 failed, 0 unverified" in capsys.readouterr().err


def test_certify_and_solve_certify_agree_on_agrees_when_no_value_was_obtained(tmp_path, capsys, monkeypatch):
    # HiGHS stops at its time limit without a store: no MILP value, so nothing agrees or not.
    from memaudit_fast.solve.backends import MilpOutcome

    monkeypatch.setattr(certify_module, "solve_highs",
                        lambda model, **kwargs: MilpOutcome("highs", "x", "time_limit", None, None, None, 0, 0.0))
    record = solve(_package(), 4).to_record()
    pkg_path = tmp_path / "p.json"
    pkg_path.write_text(GOOD, encoding="utf-8")
    assert main(["certify", _results(tmp_path, [record]), "--package", str(pkg_path), "--solver", "highs",
                 "--json"]) == 3
    from_cli = json.loads(capsys.readouterr().out)["certificate"]
    (from_api,) = certify_module.certify_results(_package(), [record], "highs")
    assert from_cli["status"] == from_api["certificate"]["status"]
    assert from_cli["agrees"] is None and from_api["certificate"]["agrees"] is None


def test_a_result_whose_group_capacity_is_not_one_is_refused_as_it_is_read(tmp_path, capsys):
    record = {**solve(_package(), 4).to_record(), "group_capacity": 0}
    pkg_path = tmp_path / "p.json"
    pkg_path.write_text(GOOD, encoding="utf-8")
    assert main(["certify", _results(tmp_path, [record]), "--package", str(pkg_path), "--solver", "highs"]) == 2
    assert "field 'group_capacity'" in capsys.readouterr().err


def test_a_missing_package_is_still_a_failure(tmp_path, capsys):
    record = {**solve(_package(), 4).to_record(), "package_id": "nowhere"}
    pkg_path = tmp_path / "p.json"
    pkg_path.write_text(GOOD, encoding="utf-8")
    assert main(["certify", _results(tmp_path, [record]), "--package", str(pkg_path), "--json"]) == 3
    cert = json.loads(capsys.readouterr().out)["certificate"]
    assert cert["agrees"] is False and "no package 'nowhere'" in cert["issues"][0]


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"solver": "cplex"}, "solver"),
    ({"solver": None}, "solver"),
    ({"time_limit": "60"}, "time_limit"),
    ({"time_limit": -1.0}, "time_limit"),
    ({"rel_tol": float("nan")}, "rel_tol"),
    ({"rel_tol": "1e-6"}, "rel_tol"),
    ({"breakpoints": 0}, "breakpoints"),
    ({"breakpoints": 2.5}, "breakpoints"),
    ({"write_model": 3}, "write_model"),
    ({"group_capacity": 0}, "group_capacity"),
    ({"group_capacity": True}, "group_capacity"),
])
def test_certify_names_a_bad_argument(kwargs, name):
    pkg = _package()
    with pytest.raises(UsageError, match=name):
        certify_module.certify(pkg, solve(pkg, 4), **{"solver": "highs", **kwargs})


@pytest.mark.parametrize(("change", "words"), [
    ({"budget": 2**80}, r"beyond 2\^53"),
    ({"selected": "c0"}, "one string"),
])
def test_a_claim_no_double_holds_or_one_string_cannot_be_certified(change, words):
    pkg = _package()
    with pytest.raises(CertificationError, match=words):
        certify_module.certify(pkg, {**solve(pkg, 4).to_record(), **change}, "highs")
