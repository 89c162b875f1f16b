"""Package.from_dict: a lone surrogate anywhere (a string where a number, a list, an object or a
whole record goes, a key, kept data) is a PackageError naming its path, never UnicodeEncodeError."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import memaudit_fast as ma
from memaudit_fast.errors import PackageError

LONE = "\ud800"
BASE: dict[str, Any] = {
    "format": "memaudit.package/1", "package_id": "p", "budgets": [1],
    "units": [{"unit_id": "u", "weight": 1}],
    "candidates": [{"candidate_id": "c", "cost": 1, "coverage": {"u": 1}}],
}


def put(path: list[Any], value: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    node: Any = data
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    return data


@pytest.mark.parametrize(("path", "record", "field"), [
    (["candidates", 0, "cost"], "candidates[0]", "cost"),
    (["units", 0, "weight"], "units[0]", "weight"),
    (["budgets"], None, "budgets"),
    (["budgets", 0], None, "budgets[0]"),
    (["objective"], None, "objective"),
    (["queries"], None, "queries"),
    (["candidates", 0, "coverage"], "candidates[0]", "coverage"),
    (["candidates", 0, "coverage", "u"], "candidates[0]", "coverage.u"),
    (["candidates", 0], "candidates[0]", None),
    (["units", 0], "units[0]", None),
    (["units", 0, "saturation"], "units[0]", "saturation"),
    (["meta"], None, "meta"),
    (["candidates"], None, "candidates"),
])
def test_lone_surrogate_in_place_of_any_value(path, record, field):
    with pytest.raises(PackageError, match="lone surrogate") as info:
        ma.Package.from_dict(put(path, LONE))
    assert info.value.record == record and info.value.field == field


def test_lone_surrogate_in_nested_places():
    data = put(["experiences"], [{"experience_id": "e", "timestamp": [LONE]}])
    with pytest.raises(PackageError, match="lone surrogate") as info:
        ma.Package.from_dict(data)
    assert (info.value.record, info.value.field) == ("experiences[0]", "timestamp[0]")
    data = put(["objective"], {"saturation": {"pwl": [[LONE, 1]]}})
    with pytest.raises(PackageError, match="lone surrogate") as info:
        ma.Package.from_dict(data)
    assert info.value.field == "objective.saturation.pwl[0][0]"


def test_lone_surrogate_in_a_key_and_in_tuples():
    with pytest.raises(PackageError, match="the key holds a lone surrogate"):
        ma.Package.from_dict(put(["candidates", 0, "coverage"], {LONE: 1}))
    with pytest.raises(PackageError, match="lone surrogate") as info:  # copied to JSON data first
        ma.Package.from_dict(put(["meta"], {"x": (LONE,)}))
    assert info.value.field == "meta.x[0]"


@pytest.mark.parametrize("data", [LONE, [LONE], {"x": LONE}, put(["format"], LONE)])
def test_lone_surrogate_as_the_whole_package_or_its_format(data):
    with pytest.raises(PackageError):
        ma.Package.from_dict(data)


def test_every_defect_is_listed():
    data = put(["candidates", 0, "cost"], LONE)
    data["units"][0]["weight"] = LONE
    with pytest.raises(PackageError) as info:
        ma.Package.from_dict(data)
    assert {(e.record, e.field) for e in info.value.errors} >= {("candidates[0]", "cost"), ("units[0]", "weight")}
