"""Artifact layout: a package's unknown record keys named like artifact fields come back as the
same unknown keys, so package -> artifact -> package gives the same data and the same optimum,
and whatever convert writes reads back."""

from __future__ import annotations

import copy
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memaudit_fast.cli.main import main
from memaudit_fast.model.artifact import RECORD_LISTS, RENAMES, mapped_names
from memaudit_fast.model.io import load_package, save_package
from memaudit_fast.model.package import Package
from memaudit_fast.solve.exact import solve


def base() -> dict[str, Any]:
    return {
        "format": "memaudit.package/1", "package_id": "rt", "budgets": [2],
        "experiences": [{"experience_id": "e0"}, {"experience_id": "e1"}],
        "units": [{"unit_id": "u0", "weight": 1}, {"unit_id": "u1", "weight": 1}, {"unit_id": "u2", "weight": 3}],
        "candidates": [
            {"candidate_id": "a", "experience_id": "e0", "cost": 1, "coverage": {"u0": 1}},
            {"candidate_id": "b", "experience_id": "e0", "cost": 1, "coverage": {"u1": 1}},
            {"candidate_id": "c", "experience_id": "e1", "cost": 2, "coverage": {"u2": 0.5}},
        ],
        "queries": [{"query_id": "q0", "required_unit_ids": ["u0"]}, {"query_id": "q1", "required_unit_ids": ["u1"]}],
    }


def without_artifact_block(data: dict[str, Any]) -> dict[str, Any]:
    """The data minus ``meta.artifact`` (the reader's record of the directory it read)."""
    out = copy.deepcopy(data)
    meta = out.get("meta", {})
    meta.pop("artifact", None)
    if not meta:
        out.pop("meta", None)
    return out


def round_trip(package: Package) -> Package:
    with tempfile.TemporaryDirectory() as tmp:
        save_package(package, Path(tmp) / "art")
        return load_package(Path(tmp) / "art")


def test_every_mapped_name_is_listed():
    # The test below covers the reader's whole mapping: every artifact name it renames, plus the
    # candidate keys it folds coverage into or takes the cost from.
    assert {n for key in RECORD_LISTS for n in mapped_names(key)} == {
        "canonical_text", "unit_weight", "question", "candidate_group", "representation_type",
        "cost_tokens", "coverage_annotations"}
    assert all(art in mapped_names(key) for key, pairs in RENAMES.items() for _, art in pairs)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10) | st.text(max_size=4) | st.sampled_from(["note", "u0", "u1"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["u0", "u1", "x", "coverage"]),
                                                                inner, max_size=3),
    max_leaves=6,
)
# Each list also gets the other lists' names (they mean nothing there and must stay so).
MAPPED = [(key, name) for key in RECORD_LISTS for other in RECORD_LISTS for name in mapped_names(other)]


NATIVE = {"units": ("text", "weight"), "queries": ("text",), "candidates": ("group", "representation")}


@given(st.lists(st.tuples(st.sampled_from(MAPPED), st.integers(0, 2), JSON_VALUES), min_size=1, max_size=4),
       st.booleans(), st.booleans())
def test_extra_keys_named_like_artifact_fields_round_trip(extras, with_native, with_weights):
    """For every name the reader maps, on records with and without the native field it maps to."""
    data = base()
    for key, fields in NATIVE.items():
        for k, row in enumerate(data[key]):
            for field in fields:
                if field == "weight":
                    if not with_weights:
                        row.pop("weight")
                elif with_native:
                    row[field] = f"{field}{k}" if field != "group" else row["experience_id"]
    for (key, name), index, value in extras:
        data[key][index % len(data[key])][name] = value
    package = Package.from_dict(data)
    again = round_trip(package)
    assert without_artifact_block(again.data) == without_artifact_block(package.data)
    assert solve(again, 2).value == solve(package, 2).value


@pytest.mark.parametrize(("key", "index", "name", "value"), [
    ("candidates", 1, "candidate_group", "note"),
    ("candidates", 1, "representation_type", "tombstone"),
    ("candidates", 0, "coverage_annotations", {"u1": {"rationale": "not covered"}}),
    ("candidates", 0, "coverage_annotations", {"u0": {"coverage": 0}}),
    ("candidates", 0, "coverage_annotations", {}),
    ("candidates", 0, "coverage_annotations", "x"),
    ("units", 0, "unit_weight", 10),
    ("units", 0, "canonical_text", "kept as given"),
    ("queries", 0, "question", "what?"),
])
def test_convert_keeps_the_optimum_and_the_key(tmp_path, capsys, key, index, name, value):
    data = base()
    data[key][index][name] = value
    src = tmp_path / "p.json"
    src.write_text(json.dumps(data))
    assert main(["convert", str(src), str(tmp_path / "art")]) == 0
    assert main(["validate", str(tmp_path / "art")]) == 0
    assert main(["convert", str(tmp_path / "art"), str(tmp_path / "back.json")]) == 0
    back = json.loads((tmp_path / "back.json").read_text())
    assert back[key][index][name] == value
    assert without_artifact_block(back) == data
    assert solve(load_package(tmp_path / "art"), 2).value == solve(Package.from_dict(data), 2).value
    capsys.readouterr()


def test_candidate_group_no_longer_merges_groups(tmp_path):
    # The finding's case: "b" shares e0 with "a"; its candidate_group is an unknown key, not its group.
    data = base()
    data["candidates"][1]["candidate_group"] = "note"
    package = Package.from_dict(data)
    assert solve(package, 2).value == 1.5  # c alone; a and b share group e0 (together they would give 2)
    again = round_trip(package)
    assert solve(again, 2).value == solve(package, 2).value
    assert "group" not in again.candidates[1] and again.candidates[1]["candidate_group"] == "note"


def test_unit_weight_extra_reads_back(tmp_path, capsys):
    # A unit_weight on one unit, weights from demand: the directory written used to be refused.
    data = base()
    for unit in data["units"]:
        unit.pop("weight")
    data["units"][0]["unit_weight"] = 10
    src = tmp_path / "w.json"
    src.write_text(json.dumps(data))
    assert main(["convert", str(src), str(tmp_path / "w.art")]) == 0
    assert main(["validate", str(tmp_path / "w.art")]) == 0
    assert load_package(tmp_path / "w.art").units[0]["unit_weight"] == 10
    manifest = json.loads((tmp_path / "w.art" / "candidate_generation_manifest.json").read_text())
    assert manifest["memaudit"]["kept_keys"] == [{"list": "units", "row": 0, "at": 1, "key": "unit_weight",
                                                  "value": 10}]
    capsys.readouterr()


def test_artifact_round_trip_is_unchanged_by_kept_keys(tmp_path):
    # artifact -> package -> artifact: the files read back the same, kept keys included.
    data = base()
    data["candidates"][1]["candidate_group"] = "note"
    save_package(Package.from_dict(data), tmp_path / "one")
    save_package(load_package(tmp_path / "one"), tmp_path / "two")
    for name in sorted(os.listdir(tmp_path / "one")):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name


def test_cost_tokens_equal_to_cost_still_round_trips(tmp_path):
    data = base()
    data["candidates"][0]["cost_tokens"] = 1
    data["candidates"][1]["cost_tokens"] = 7  # differs from cost: stays an extra key
    data["meta"] = {"artifact": {"cost_from_cost_tokens": ["a", "b"]}}
    again = round_trip(Package.from_dict(data))
    assert [c["cost"] for c in again.candidates] == [1, 1, 2]
    assert again.candidates[1]["cost_tokens"] == 7
    assert without_artifact_block(again.data) == without_artifact_block(data)
