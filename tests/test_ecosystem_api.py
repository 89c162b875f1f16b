"""The numpy-first API: packages from arrays, short reprs, read-only arrays, results as tables."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import memaudit_fast as ma
from memaudit_fast.cli.main import main
from memaudit_fast.results.frame import COLUMNS


def _example() -> ma.Package:
    return ma.load_package(ma.example_package_path())


def test_top_level_names() -> None:
    token = ma.CancelToken()
    token.cancel()
    assert ma.example_package().package_id == _example().package_id
    assert issubclass(ma.PackageError, ValueError) and issubclass(ma.UsageError, ValueError)
    assert issubclass(ma.SolverError, RuntimeError) and issubclass(ma.CertificationError, RuntimeError)


def test_reprs_are_short() -> None:
    pkg = _example()
    text = repr(pkg)
    assert text.startswith("Package('example/lisbon-porto'") and "candidates=17" in text and len(text) < 200
    compiled = ma.compile_package(pkg)
    assert "candidates=17" in repr(compiled) and len(repr(compiled)) < 250


def test_compiled_arrays_are_read_only() -> None:
    compiled = ma.compile_package(_example())
    for array in (compiled.cost, compiled.group_of, compiled.weight, compiled.indptr, compiled.indices,
                  compiled.values):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 0


@pytest.mark.parametrize("edit, field", [
    (lambda d: d["candidates"][0].__setitem__("cost", "x"), "cost"),
    (lambda d: d["candidates"][0].__setitem__("cost", -1), "cost"),
    (lambda d: d["candidates"][0]["coverage"].__setitem__("no-such-unit", 1.0), "coverage"),
])
def test_editing_data_then_solving_is_a_package_error(edit, field) -> None:
    pkg = _example()
    edit(pkg.data)
    with pytest.raises(ma.PackageError) as info:
        ma.solve(pkg, 8)
    assert info.value.field == field


def test_adding_a_candidate_after_validation_is_a_package_error() -> None:
    pkg = _example()
    pkg.data["candidates"].append({"candidate_id": "new", "cost": 1, "coverage": {}})
    with pytest.raises(ma.PackageError, match="changed after it was validated"):
        ma.solve(pkg, 8)


def test_iter_packages_takes_one_path(tmp_path) -> None:
    path = tmp_path / "set.jsonl"
    ma.write_package_set([_example(), _example().data | {"package_id": "two"}], path)
    assert [p.package_id for p in ma.iter_packages(str(path))] == ["example/lisbon-porto", "two"]
    assert len(list(ma.iter_packages(path))) == 2


# Packages from arrays ---------------------------------------------------------------------------
def _arrays(seed: int = 0):
    rng = np.random.default_rng(seed)
    n, m = 12, 7
    dense = np.where(rng.random((n, m)) < 0.35, rng.integers(1, 3, (n, m)) / 2.0, 0.0)
    cost = rng.integers(1, 6, n).astype(float)
    group = np.repeat(np.arange(n // 2), 2)
    weight = rng.integers(1, 4, m).astype(float)
    return cost, group, dense, weight


def _brute(cost, group, dense, weight, budget) -> float:
    best = 0.0
    n = len(cost)
    for mask in range(1 << n):
        chosen = [i for i in range(n) if mask >> i & 1]
        if sum(cost[chosen]) > budget or len({group[i] for i in chosen}) < len(chosen):
            continue
        best = max(best, float(np.sum(weight * np.minimum(1.0, dense[chosen].sum(axis=0)))))
    return best


@pytest.mark.parametrize("kind", ["csr", "csc", "coo", "csr_array", "triples", "dense"])
def test_from_arrays_matches_brute_force(kind) -> None:
    sparse = pytest.importorskip("scipy.sparse")
    cost, group, dense, weight = _arrays()
    coverage = {
        "csr": lambda: sparse.csr_matrix(dense), "csc": lambda: sparse.csc_matrix(dense),
        "coo": lambda: sparse.coo_matrix(dense), "csr_array": lambda: sparse.csr_array(dense),
        "triples": lambda: (sparse.csr_matrix(dense).indptr, sparse.csr_matrix(dense).indices,
                            sparse.csr_matrix(dense).data),
        "dense": lambda: dense,
    }[kind]()
    pkg = ma.Package.from_arrays(cost, group, coverage, weight, budgets=np.array([4, 8]))
    assert pkg.budgets == [4.0, 8.0]
    for result in ma.solve(pkg):
        assert result.status == "optimal"
        assert result.value == pytest.approx(_brute(cost, group, dense, weight, result.budget))


def test_from_arrays_options() -> None:
    cost, _group, dense, weight = _arrays(1)
    pkg = ma.Package.from_arrays(cost, None, dense, weight, saturation="linear", budgets=np.int64(5),
                                 ids=[f"m{i}" for i in range(12)], package_id="mine")
    assert pkg.package_id == "mine" and pkg.saturation_name == "linear" and pkg.budgets == [5.0]
    assert len(set(pkg.candidate_groups)) == 12  # None: each candidate its own group
    assert ma.solve(pkg)[0].selected[0].startswith("m")


@pytest.mark.parametrize("change, match", [
    ({"cost": [1.0, math.nan, 1.0]}, "candidate 1: field 'cost'.*finite"),
    ({"weight": [1.0, -2.0]}, "unit 1: field 'weight'.*>= 0"),
    ({"cost": [1.0, 2.0], "group": None}, "field 'coverage'.*shape \\(2, 2\\)"),
    ({"group": [0, 1]}, "field 'group'.*one group per candidate"),
    ({"coverage": (np.array([0, 1, 1, 2]), np.array([0, 5]), np.array([1.0, 1.0]))}, "unit index 5"),
    ({"coverage": (np.array([0, 2, 2, 2]), np.array([0, 0]), np.array([1.0, 1.0]))}, "appears twice"),
    ({"saturation": {"pwl": [[1, 1], [2, 3]]}}, "saturation"),
    ({"budgets": [-1]}, "budgets"),
])
def test_from_arrays_bad_input_names_the_field(change, match) -> None:
    args = {"cost": [1.0, 2.0, 3.0], "group": [0, 0, 1], "coverage": np.eye(3, 2), "weight": [1.0, 1.0]}
    args.update(change)
    with pytest.raises(ma.PackageError, match=match):
        ma.Package.from_arrays(args.pop("cost"), args.pop("group"), args.pop("coverage"), args.pop("weight"),
                               **args)


# Results as tables ------------------------------------------------------------------------------
def test_results_to_frame_schema(capsys) -> None:
    pytest.importorskip("pandas")
    assert main(["sweep", str(ma.example_package_path()), "--budget-fracs", "0.1,0.3", "--writers",
                 "gvt,density_only", "--json"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    frame = ma.results_to_frame(records)
    assert list(frame.columns[:len(COLUMNS)]) == list(COLUMNS)
    assert len(frame) == 4  # two budgets x two writers
    assert frame["budget"].dtype == np.float64 and set(frame["budget_frac"]) == {0.1, 0.3}
    assert set(frame["writer"]) == {"gvt", "density_only"} and set(frame["writer_kind"]) == {"baseline"}
    assert str(frame["nodes"].dtype) == "Int64" and str(frame["proven_optimal"].dtype) == "boolean"
    # SolveResult objects work too, one row each (no writer).
    solved = ma.results_to_frame(ma.solve(_example(), budgets=np.array([8, 16])))
    assert list(solved["budget"]) == [8.0, 16.0] and solved["writer"].isna().all()
    table = ma.results_to_table(records)
    assert table.num_rows == 4 and table.schema.field("budget").type == "double"


def test_systems_block_is_flattened() -> None:
    pytest.importorskip("pyarrow")
    record = {"format": "memaudit.result/1", "package_id": "u", "budget": 8, "opt": 10.0,
              "status": "optimal", "package_opt": {"value": 6.0},
              "systems": {"mem0": {"memories": 4, "full_store_ratio": 0.0, "reasons": {"full_store_ratio": "over"}},
                          "letta": {"memories": 6, "full_store_ratio": 0.5, "reasons": {}}}}
    rows = ma.results_to_table([record]).to_pylist()
    assert [r["writer"] for r in rows] == ["mem0", "letta"] and {r["writer_kind"] for r in rows} == {"system"}
    assert rows[0]["system_full_store_ratio"] == 0.0 and rows[0]["system_reasons_full_store_ratio"] == "over"
    assert rows[1]["system_memories"] == 6 and rows[0]["package_opt_value"] == 6.0 and rows[0]["budget"] == 8.0
    (wide,) = ma.results_to_table([record], layout="wide").to_pylist()
    assert wide["system_mem0_full_store_ratio"] == 0.0 and wide["system_letta_memories"] == 6
    assert "writer" not in wide and wide["system_mem0_reasons_full_store_ratio"] == "over"
    with pytest.raises(ma.UsageError, match="layout"):
        ma.results_to_table([record], layout="tall")


def test_read_results_refuses_a_package_set(tmp_path) -> None:
    path = tmp_path / "set.jsonl"
    ma.write_package_set([_example()], path)
    with pytest.raises(ma.PackageError, match="package set"):
        ma.read_results(path)
    other = tmp_path / "other.jsonl"
    other.write_text('{"a": 1}\n')
    with pytest.raises(ma.PackageError, match="expected a memaudit.result/1 record"):
        ma.read_results(other)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(ma.PackageError, match="no memaudit.result/1 records"):
        ma.read_results(empty)


def test_bare_memaudit_prints_short_usage_on_stderr(capsys) -> None:
    from memaudit_fast.cli.main import SHORT_HELP, SUBCOMMANDS, build_parser

    assert main([]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "usage: memaudit COMMAND" in err
    names = set(build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]
    assert set(SHORT_HELP) == names and len(names) == len(SUBCOMMANDS)
    assert all(f"  {name} " in err for name in names)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--version"])
    assert ma.__version__ in capsys.readouterr().out
