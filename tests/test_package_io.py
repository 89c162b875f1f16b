"""Both layouts round-trip losslessly, and conversion keeps everything the solver sees."""

from __future__ import annotations

import copy
import gzip
import json

import numpy as np
import pytest
from hypothesis import given, settings

from memaudit_fast.errors import UsageError
from memaudit_fast.model.artifact import read_artifact_dir
from memaudit_fast.model.compiled import compile_package
from memaudit_fast.model.examples import example_package, example_package_path
from memaudit_fast.model.io import load_package, save_package
from memaudit_fast.model.package import Package
from memaudit_fast.model.sets import iter_packages, iter_set_entries, write_package_set
from oracles.packages import read_rows, write_artifact_by_hand
from strategies import packages


def same_problem(a, b) -> None:
    """Everything that determines the optimum is identical."""
    ca, cb = compile_package(a), compile_package(b)
    assert ca.candidate_ids == cb.candidate_ids
    assert ca.unit_ids == cb.unit_ids
    for name in ("cost", "group_of", "weight", "indptr", "indices", "values", "times", "saturation_of"):
        np.testing.assert_array_equal(getattr(ca, name), getattr(cb, name), err_msg=name)
    assert ca.saturations == cb.saturations
    assert ca.budgets == cb.budgets


def without_artifact_meta(data: dict) -> dict:
    out = copy.deepcopy(data)
    meta = out.pop("meta", {})
    meta.pop("artifact", None)
    if meta:
        out["meta"] = meta
    return out


@settings(max_examples=40)
@given(packages())
def test_single_file_round_trip(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("rt") / "p.json"
    save_package(Package.from_dict(data), path)
    assert load_package(path).data == data


@settings(max_examples=40)
@given(packages())
def test_json_to_artifact_to_json(tmp_path_factory, data):
    root = tmp_path_factory.mktemp("art")
    save_package(Package.from_dict(data), root / "dir")
    back = load_package(root / "dir")
    assert without_artifact_meta(back.data) == without_artifact_meta(data)
    same_problem(data, back)
    # ... and back to an artifact directory gives the same files.
    save_package(back, root / "dir2")
    for name in sorted(p.name for p in (root / "dir").iterdir()):
        assert (root / "dir" / name).read_text() == (root / "dir2" / name).read_text(), name




def test_artifact_field_names_import(tmp_path):
    write_artifact_by_hand(tmp_path / "pkg")
    pkg = read_artifact_dir(tmp_path / "pkg")
    assert pkg.package_id == "x"
    assert pkg.unit_weights == [2.0, 1.0] and pkg.weights_rule == "explicit"
    c0, c1, c2 = pkg.candidates
    assert c0["group"] == "x:e0" and c0["representation"] == "fact"
    assert c1["cost"] == 2  # from cost_tokens, since it has no "cost"
    assert c2["coverage"] == {"invalid:bo": 0.5}
    assert c2["coverage_annotations"]["invalid:bo"]["coverage_label"] == "partial_weak"
    assert pkg.units[0]["text"] == "current:bo"
    assert pkg.queries[0]["text"].startswith("Synthetic objective probe")
    compiled = compile_package(pkg)
    assert compiled.objective([0, 1]) == pytest.approx(3.0)
    assert compiled.objective([0, 2]) == pytest.approx(2.5)
    assert list(compiled.group_of) == [0, 1, 1]


def test_artifact_round_trip_gives_the_same_files(tmp_path):
    write_artifact_by_hand(tmp_path / "pkg")
    pkg = load_package(tmp_path / "pkg")
    save_package(pkg, tmp_path / "single.json")
    single = load_package(tmp_path / "single.json")
    same_problem(pkg, single)
    save_package(single, tmp_path / "again")
    for name in ("experiences.jsonl", "evidence_units.jsonl", "queries.jsonl", "candidate_memories.jsonl",
                 "coverage_matrix.jsonl", "annotation_decisions.jsonl"):
        assert read_rows(tmp_path / "again", name) == read_rows(tmp_path / "pkg", name), name
    assert json.loads((tmp_path / "again" / "candidate_generation_manifest.json").read_text()) == json.loads(
        (tmp_path / "pkg" / "candidate_generation_manifest.json").read_text())
    assert (tmp_path / "again" / "instance.json").read_text() == (tmp_path / "pkg" / "instance.json").read_text()


def test_artifact_symlink_refused(tmp_path):
    write_artifact_by_hand(tmp_path / "pkg")
    target = tmp_path / "elsewhere.jsonl"
    (tmp_path / "pkg" / "queries.jsonl").rename(target)
    (tmp_path / "pkg" / "queries.jsonl").symlink_to(target)
    with pytest.raises(Exception, match="symbolic link"):
        load_package(tmp_path / "pkg")


def test_package_sets_jsonl_gzip_and_directories(tmp_path):
    base = example_package().data
    variants = []
    for k in range(3):
        d = copy.deepcopy(base)
        d["package_id"] = f"set/{k}"
        variants.append(d)
    assert write_package_set(variants, tmp_path / "set.jsonl") == 3
    assert write_package_set(variants, tmp_path / "set.jsonl.gz") == 3
    with gzip.open(tmp_path / "set.jsonl.gz", "rt") as handle:
        assert len(handle.read().splitlines()) == 3
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    save_package(Package.from_dict(variants[0]), mixed / "a.json")
    save_package(Package.from_dict(variants[1]), mixed / "b_artifact")
    ids = [p.package_id for p in iter_packages([tmp_path / "set.jsonl", tmp_path / "set.jsonl.gz", mixed])]
    assert ids == ["set/0", "set/1", "set/2"] * 2 + ["set/0", "set/1"]


def test_set_with_a_bad_line_reports_it_and_goes_on(tmp_path):
    good = json.dumps(example_package().data)
    (tmp_path / "s.jsonl").write_text(good + "\n{\"format\": \"memaudit.package/1\", \"package_id\": \"bad\"}\n" + good + "\n{trunc")
    entries = list(iter_set_entries([tmp_path / "s.jsonl"]))
    assert [e.error is None for e in entries] == [True, False, True, False]
    assert "line 2" in str(entries[1].error) and "units" in str(entries[1].error)
    assert "line 4" in str(entries[3].error) and "not valid JSON" in str(entries[3].error)


def test_never_writes_over_input_or_existing(tmp_path):
    src = tmp_path / "p.json"
    src.write_text(example_package_path().read_text())
    pkg = load_package(src)
    with pytest.raises(UsageError, match="input"):
        save_package(pkg, src, overwrite=True)
    (tmp_path / "other.json").write_text("keep me")
    with pytest.raises(UsageError, match="exists"):
        save_package(pkg, tmp_path / "other.json")
    assert (tmp_path / "other.json").read_text() == "keep me"
    save_package(pkg, tmp_path / "other.json", overwrite=True)
    assert load_package(tmp_path / "other.json").data == pkg.data


def test_query_demand_weights_and_rule():
    data = {
        "format": "memaudit.package/1", "package_id": "w",
        "units": [{"unit_id": "a"}, {"unit_id": "b"}, {"unit_id": "c"}],
        "candidates": [{"candidate_id": "c0", "cost": 1, "coverage": {"a": 1}}],
        "queries": [{"query_id": "q0", "required_unit_ids": ["a", "b"]},
                    {"query_id": "q1", "required_unit_ids": ["a"]}],
    }
    pkg = Package.from_dict(data)
    assert pkg.weights_rule == "query_demand"
    assert pkg.unit_weights == [2.0, 1.0, 0.0]


def test_a_query_naming_a_unit_twice_counts_once_in_every_reader():
    # w_r is the number of queries that require r: repeating an id in one query adds nothing.
    from memaudit_fast.model.fastpath import _fast_package, scanned_package
    from memaudit_fast.model.limits import current_limits
    from memaudit_fast.model.spec import _default_locator
    from memaudit_fast.model.validate import _Validator

    data = {
        "format": "memaudit.package/1", "package_id": "w", "budgets": [1],
        "units": [{"unit_id": "a"}, {"unit_id": "b"}],
        "candidates": [{"candidate_id": "ca", "cost": 1, "coverage": {"a": 1}},
                       {"candidate_id": "cb", "cost": 1, "coverage": {"b": 1}}],
        "queries": [{"query_id": "q0", "required_unit_ids": ["a", "a", "a"]},
                    {"query_id": "q1", "required_unit_ids": ["b", "a"]},
                    {"query_id": "q2", "required_unit_ids": ["b", "b"]}],
    }
    limits = current_limits()
    raw = json.dumps(data).encode()
    assert scanned_package(raw, None, limits)["unit_weights"] == [2.0, 2.0]  # the C++ scanner
    assert _fast_package(copy.deepcopy(data), None, limits)["unit_weights"] == [2.0, 2.0]
    assert _Validator(copy.deepcopy(data), None, _default_locator, limits).run()["unit_weights"] == [2.0, 2.0]
    assert Package.from_dict(data).unit_weights == [2.0, 2.0]
