"""The error names the record and element at fault: a weight that is not a number is its own
unit's type error (not a mix blamed on another unit), and a bad PWL coordinate is named down to
pwl[k][0] (z) or pwl[k][1] (h)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import memaudit_fast as ma
from memaudit_fast.cli.main import main
from memaudit_fast.errors import PackageError

BASE: dict[str, Any] = {
    "format": "memaudit.package/1", "package_id": "p", "budgets": [1],
    "units": [{"unit_id": "u0"}, {"unit_id": "u1"}, {"unit_id": "u2"}],
    "candidates": [{"candidate_id": "a", "cost": 1, "coverage": {"u0": 1}}],
    "queries": [{"query_id": "q", "required_unit_ids": ["u0"]}],
}
ABSENT = object()


def with_weights(*weights: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    for unit, w in zip(data["units"], weights):
        if w is not ABSENT:
            unit["weight"] = w
    return data


def blamed(data: dict[str, Any]) -> list[tuple[str | None, str | None, str]]:
    with pytest.raises(PackageError) as info:
        ma.Package.from_dict(data)
    return [(e.record, e.field, e.detail) for e in info.value.errors]


@pytest.mark.parametrize(("weights", "records", "found"), [
    ((None, ABSENT, ABSENT), ["units[0]"], "found null"),
    ((ABSENT, None, ABSENT), ["units[1]"], "found null"),
    (("x", ABSENT, 1), ["units[0]"], "found the string 'x'"),
    ((True, ABSENT, ABSENT), ["units[0]"], "found the boolean true"),
    ((None, None, None), ["units[0]", "units[1]", "units[2]"], "found null"),
    ((1, -1, ABSENT), ["units[1]"], "expected a number >= 0"),
])
def test_non_number_weight_is_its_own_error(weights, records, found):
    errors = blamed(with_weights(*weights))
    assert [r for r, _, _ in errors] == records
    assert all(f == "weight" and found in d for _, f, d in errors)


@pytest.mark.parametrize(("weights", "record"), [((1, ABSENT, ABSENT), "units[1]"), ((ABSENT, 2, 2), "units[1]")])
def test_a_true_mix_is_still_a_mix(weights, record):
    ((where, field, detail),) = blamed(with_weights(*weights))
    assert (where, field) == (record, "weight") and "some units carry a weight and others do not" in detail


def test_cli_names_the_null_weight(tmp_path, capsys):
    path = tmp_path / "wn.json"
    path.write_text(json.dumps(with_weights(None, ABSENT, ABSENT)))
    assert main(["validate", str(path)]) == 2
    assert "units[0]: field 'weight': found null" in capsys.readouterr().err
    set_path = tmp_path / "s.jsonl"
    set_path.write_text(json.dumps(with_weights(None, ABSENT, ABSENT)) + "\n")
    out = tmp_path / "res.jsonl"
    assert main(["batch", str(set_path), "--out", str(out), "--quiet", "--finish", "none"]) == 3
    assert "units[0]: field 'weight': found null" in json.loads(out.read_text())["error"]


def pwl(points: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    data["objective"] = {"saturation": {"pwl": points}}
    return data


@pytest.mark.parametrize(("points", "field", "found"), [
    ([[-1, 0.5], [1, 1]], "pwl[0][0]", "found -1"),
    ([[0.5, -1], [1, 1]], "pwl[0][1]", "found -1"),
    ([[0.5, 0.5], [1, "x"]], "pwl[1][1]", "found the string 'x'"),
    ([[0.5, 0.5], [None, 1]], "pwl[1][0]", "found null"),
    ([[0, 1], [1, 2]], "pwl[0][1]", "through the origin"),
    ([[1, 1], [0.5, 1.2]], "pwl[1][0]", "does not increase"),
    ([[0.5, 0.5], [1, 0.2]], "pwl[1][1]", "must not decrease"),
    ([[0, 0], [1, 1], [2, 0.5]], "pwl[2][1]", "must not decrease"),
    ([[0.5, 0.2], [1, 1]], "pwl[1]", "concave"),  # a slope is the pair's, not one coordinate's
    ([[0.5, 0.5], [1]], "pwl[1]", "a pair [z, h]"),
])
def test_pwl_error_names_the_element(points, field, found):
    errors = blamed(pwl(points))
    fields = [f for _, f, _ in errors]
    assert f"objective.saturation.{field}" in fields
    assert any(found in d for _, f, d in errors if f == f"objective.saturation.{field}")


def test_unit_pwl_error_names_the_element():
    data = copy.deepcopy(BASE)
    data["units"][2]["saturation"] = {"pwl": [[0.5, 0.5], [2, -3]]}
    ((record, field, detail),) = blamed(data)
    assert (record, field) == ("units[2]", "saturation.pwl[1][1]") and "found -3" in detail
