"""Package.from_dict keeps only JSON data (so what it keeps is written back unchanged) and
takes numpy numbers and arrays where numbers go, converted exactly."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

import memaudit_fast as ma
from memaudit_fast.errors import PackageError
from memaudit_fast.suites.small import generate_package


@pytest.fixture(scope="module")
def base() -> dict:
    pkg = generate_package("base", seed=0)
    return json.loads(json.dumps(pkg))


def refused(data: dict, match: str) -> PackageError:
    with pytest.raises(PackageError, match=match) as info:
        ma.Package.from_dict(data)
    return info.value


def test_non_string_key_names_its_path(base):
    data = copy.deepcopy(base)
    data["candidates"][0]["coverage"] = {1: 1.0}
    err = refused(data, "keys of a JSON object are strings")
    assert err.record == "candidates[0]" and err.field == "coverage.1"


@pytest.mark.parametrize("where", ["meta", "unknown"])
def test_non_string_key_in_kept_data(base, where):
    data = copy.deepcopy(base)
    data.setdefault(where, {})[(1, 2)] = 3
    assert refused(data, "keys of a JSON object are strings").field == f"{where}.(1, 2)"


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_non_finite_in_meta_is_refused(base, value):
    data = copy.deepcopy(base)
    data["meta"]["x"] = value
    assert refused(data, "not JSON numbers").field == "meta.x"


@pytest.mark.parametrize(("value", "match"), [({1, 2}, "JSON has no sets"), (b"ab", "bytes"),
                                              (object(), "expected JSON data")])
def test_non_json_values_are_refused(base, value, match):
    data = copy.deepcopy(base)
    data["foo"] = {"deep": [0, value]}
    assert refused(data, match).field == "foo.deep[1]"


def test_every_defect_is_listed(base):
    data = copy.deepcopy(base)
    data["meta"]["x"] = float("nan")
    data["foo"] = {1, 2}
    err = refused(data, "not JSON numbers")
    assert sorted(e.field for e in err.errors) == ["foo", "meta.x"]


def test_kept_data_is_written_back_unchanged(base, tmp_path):
    data = copy.deepcopy(base)
    data["foo"] = (1, [2.5, None, True], {"k": "v"})
    pkg = ma.Package.from_dict(data)
    ma.save_package(pkg, tmp_path / "o.json")
    again = json.loads((tmp_path / "o.json").read_text())
    assert again["foo"] == [1, [2.5, None, True], {"k": "v"}]
    assert data["foo"] == (1, [2.5, None, True], {"k": "v"})  # the caller's dict is left as it is


def test_self_holding_data_is_refused(base):
    data = copy.deepcopy(base)
    loop: list = []
    loop.append(loop)
    data["meta"]["loop"] = loop
    assert refused(data, "nest more than").field == "meta.loop[0][0]"


@pytest.mark.parametrize(("value", "expected"), [(np.int64(6), 6), (np.uint8(3), 3), (np.float32(0.1), float(np.float32(0.1))),
                                                 (np.float64(2.5), 2.5), (np.array(4), 4)])
def test_numpy_cost(base, value, expected):
    data = copy.deepcopy(base)
    data["candidates"][0]["cost"] = value
    pkg = ma.Package.from_dict(data)
    cost = pkg.data["candidates"][0]["cost"]
    assert cost == expected and type(cost) is type(expected)
    assert pkg == ma.Package.from_dict(json.loads(json.dumps(pkg.data)))


@pytest.mark.parametrize("value", [np.float64("nan"), np.float32("inf")])
def test_numpy_non_finite_is_refused(base, value):
    data = copy.deepcopy(base)
    data["candidates"][0]["cost"] = value
    err = refused(data, "not JSON numbers")
    assert err.record == "candidates[0]" and err.field == "cost"


def test_numpy_bool_is_not_a_number(base):
    data = copy.deepcopy(base)
    data["candidates"][0]["cost"] = np.bool_(True)
    refused(data, "expected a JSON number")


def test_numpy_arrays_where_lists_of_numbers_go(base):
    data = copy.deepcopy(base)
    data["budgets"] = np.array([2, 4], dtype=np.int32)
    data["objective"] = {"saturation": {"pwl": np.array([[0.5, 0.7], [1, 1]])}}
    data["meta"]["arr"] = np.arange(3)
    pkg = ma.Package.from_dict(data)
    assert pkg.budgets == [2.0, 4.0] and pkg.data["meta"]["arr"] == [0, 1, 2]
    assert pkg.default_saturation.points == ((0.0, 0.0), (0.5, 0.7), (1.0, 1.0))


def test_numpy_strings_are_refused(base):
    data = copy.deepcopy(base)
    data["meta"]["names"] = np.array(["a", "b"])
    refused(data, "expected numbers")


def test_from_arrays_takes_numpy_pwl_and_meta():
    pkg = ma.Package.from_arrays(cost=np.array([1, 2]), group=None, coverage=np.eye(2), weight=np.ones(2),
                                 saturation={"pwl": np.array([[0.5, 0.7], [1.0, 1.0]])},
                                 budgets=np.int64(2), meta={"a": np.float32(0.5)})
    assert pkg.data["objective"] == {"saturation": {"pwl": [[0.5, 0.7], [1.0, 1.0]]}}
    assert pkg.data["meta"] == {"a": 0.5} and pkg.budgets == [2.0]
    with pytest.raises(PackageError, match="not JSON numbers"):
        ma.Package.from_arrays(cost=np.array([1, 2]), group=None, coverage=np.eye(2), weight=np.ones(2),
                               meta={"a": np.float32("nan")})
