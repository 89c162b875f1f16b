"""estimated_value / estimated_coverage: read from both layouts, validated, kept, never scored."""

from __future__ import annotations

import copy
import json

import pytest

from memaudit_fast.errors import PackageError
from memaudit_fast.model.artifact import read_artifact_dir
from memaudit_fast.model.estimates import candidate_estimates, group_capacity_of
from memaudit_fast.model.io import load_package, save_package
from memaudit_fast.model.package import Package
from memaudit_fast.solve.exact import exact_opt
from oracles.packages import read_rows, write_artifact_by_hand


def small() -> dict:
    return {
        "format": "memaudit.package/1", "package_id": "p", "budgets": [3],
        "units": [{"unit_id": "u0", "weight": 1.0}, {"unit_id": "u1", "weight": 2.0}],
        "candidates": [
            {"candidate_id": "a", "cost": 1, "coverage": {"u0": 1.0},
             "estimated_value": 5.0, "estimated_coverage": {"u1": 1.0}},
            {"candidate_id": "b", "cost": 2, "coverage": {"u1": 1.0}, "estimated_value": 0},
            {"candidate_id": "c", "cost": 2, "coverage": {"u1": 0.5}},
        ],
    }


def test_estimates_are_read_and_kept_in_the_single_file_layout(tmp_path):
    data = small()
    pkg = Package.from_dict(copy.deepcopy(data))
    est = candidate_estimates(pkg.candidates)
    assert est[0].value == 5.0 and est[0].coverage == {"u1": 1.0}
    assert est[1].value == 0.0 and est[1].coverage is None
    assert est[2].value is None and est[2].coverage is None
    save_package(pkg, tmp_path / "p.json")
    assert load_package(tmp_path / "p.json").data == data


def test_estimates_never_change_opt():
    data = small()
    blind = copy.deepcopy(data)
    for cand in blind["candidates"]:
        cand.pop("estimated_value", None)
        cand.pop("estimated_coverage", None)
    wild = copy.deepcopy(data)
    for cand in wild["candidates"]:
        cand["estimated_value"] = 1e6
        cand["estimated_coverage"] = {"u0": 50.0, "u1": 50.0}
    opts = {exact_opt(Package.from_dict(d), 3) for d in (data, blind, wild)}
    assert opts == {3.0}


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("estimated_value", -1, "a number >= 0"),
        ("estimated_value", "3", "a JSON number"),
        ("estimated_value", True, "a JSON number"),
        ("estimated_coverage", [1.0], "an object"),
        ("estimated_coverage", {"nope": 1.0}, "not in units"),
        ("estimated_coverage", {"u0": -0.5}, "a number >= 0"),
        ("estimated_coverage", {"u0": "x"}, "a JSON number"),
    ],
)
def test_bad_estimates_are_named(field, value, expected):
    data = small()
    data["candidates"][2][field] = value
    with pytest.raises(PackageError) as err:
        Package.from_dict(data)
    assert expected in str(err.value)
    assert err.value.record == "candidates[2]"
    assert err.value.field is not None and err.value.field.startswith(field)


def test_null_and_empty_mean_no_estimate():
    data = small()
    data["candidates"][2]["estimated_value"] = None
    data["candidates"][2]["estimated_coverage"] = {}
    est = candidate_estimates(Package.from_dict(data).candidates)[2]
    assert est.value is None and est.coverage is None


def test_estimates_from_the_artifact_layout_round_trip(tmp_path):
    write_artifact_by_hand(tmp_path / "pkg")
    pkg = read_artifact_dir(tmp_path / "pkg")
    est = candidate_estimates(pkg.candidates)
    assert [e.value for e in est] == [None, 0.5, None]
    assert [e.coverage for e in est] == [None, {"invalid:bo": 1.0}, None]
    save_package(pkg, tmp_path / "single.json")
    single = load_package(tmp_path / "single.json")
    assert candidate_estimates(single.candidates) == est
    save_package(single, tmp_path / "again")
    assert read_rows(tmp_path / "again", "candidate_memories.jsonl") == read_rows(tmp_path / "pkg", "candidate_memories.jsonl")


def test_bad_artifact_estimate_names_the_file_line(tmp_path):
    write_artifact_by_hand(tmp_path / "pkg")
    path = tmp_path / "pkg" / "candidate_memories.jsonl"
    rows = read_rows(tmp_path / "pkg", "candidate_memories.jsonl")
    rows[1]["estimated_coverage"] = {"ghost": 1.0}
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(PackageError) as err:
        read_artifact_dir(tmp_path / "pkg")
    assert "candidate_memories.jsonl line 2" in str(err.value) and "ghost" in str(err.value)


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True, None])
def test_group_capacity_is_checked(bad):
    data = small()
    data["objective"] = {"group_capacity": bad}
    with pytest.raises(PackageError) as err:
        Package.from_dict(data)
    assert err.value.field == "objective.group_capacity"


def test_group_capacity_default_and_given():
    assert group_capacity_of(Package.from_dict(small()).data) == 1
    data = small()
    data["objective"] = {"group_capacity": 2}
    assert group_capacity_of(Package.from_dict(data).data) == 2
