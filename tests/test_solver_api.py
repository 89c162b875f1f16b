"""memaudit_fast.solve, SolveResult.to_record and the ``memaudit solve`` command."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import pytest

import memaudit_fast as mf
from memaudit_fast.cli.main import main
from memaudit_fast.model.compiled import compile_package
from memaudit_fast.model.examples import example_package_path
from memaudit_fast.model.io import load_package
from memaudit_fast.solve.exact import STATUSES, CancelToken
from oracles.objective import objective as package_objective


@pytest.fixture
def example() -> dict:
    return json.loads(example_package_path().read_text())


def test_every_input_form_gives_the_same_result(example: dict) -> None:
    path = example_package_path()
    forms = [example, path, str(path), load_package(path), compile_package(path)]
    results = [mf.solve(form, 8) for form in forms]
    assert len({(r.value, r.selected) for r in results}) == 1
    assert results[0].value == pytest.approx(package_objective(example, list(results[0].selected)))


def test_single_budget_gives_one_result_and_lists_give_lists(example: dict) -> None:
    one = mf.solve(example, 16)
    assert isinstance(one, mf.SolveResult)
    several = mf.solve(example, budgets=[16, 4])
    assert [r.budget for r in several] == [16.0, 4.0]
    assert several[0] == dataclasses.replace(one, seconds=several[0].seconds, nodes=several[0].nodes)
    own = mf.solve(example)
    assert [r.budget for r in own] == [float(b) for b in example["budgets"]]
    assert mf.solve(example, [2, 3])[1].budget == 3.0


def test_result_fields_and_record(example: dict) -> None:
    result = mf.solve(example, 16)
    assert result.package_id == example["package_id"]
    assert result.status in STATUSES and result.proven_optimal
    assert result.saturation == "cap1" and result.weights_rule == "explicit"
    assert result.cost <= 16 and result.upper_bound == pytest.approx(result.value)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.value = 0.0  # type: ignore[misc]
    record = result.to_record()
    assert record["format"] == "memaudit.result/1"
    assert record["opt"] == result.value and record["budget"] == 16 and isinstance(record["budget"], int)
    assert record["selected"] == list(result.selected)
    for key in ("package_id", "saturation", "weights_rule", "upper_bound", "status", "proven_optimal",
                "cost", "nodes", "seconds", "gap"):
        assert key in record
    json.dumps(record, allow_nan=False)


def test_weights_rule_from_query_demand(example: dict) -> None:
    data = copy.deepcopy(example)
    for unit in data["units"]:
        unit.pop("weight", None)
    result = mf.solve(data, 16)
    assert result.weights_rule == "query_demand"
    assert result.value == pytest.approx(package_objective(data, list(result.selected)))


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((-1,), {}, "budget"),
        ((float("inf"),), {}, "budget"),
        (("8",), {}, "budget"),
        ((8,), {"budgets": [4]}, "either"),
        ((8,), {"time_limit": -1}, "time_limit"),
        ((8,), {"node_limit": 1.5}, "node_limit"),
        ((8,), {"node_limit": -2}, "node_limit"),
    ],
)
def test_usage_errors(example: dict, args: tuple, kwargs: dict, message: str) -> None:
    with pytest.raises(mf.UsageError, match=message):
        mf.solve(example, *args, **kwargs)


def test_package_without_budgets_needs_one(example: dict) -> None:
    data = copy.deepcopy(example)
    del data["budgets"]
    with pytest.raises(mf.UsageError, match="pass budget"):
        mf.solve(data)
    assert mf.solve(data, 8).value == mf.solve(example, 8).value


def test_cancel_token_is_exposed(example: dict) -> None:
    token = CancelToken()
    token.cancel()
    result = mf.solve(example, 32, cancel=token)
    assert result.status in ("interrupted", "optimal")  # a root that closes is still a proof
    assert result.upper_bound >= mf.solve(example, 32).value - 1e-9


def write_package(tmp_path: Path, data: dict, name: str = "p.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def test_cli_json_lines(example: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_package(tmp_path, example)
    assert main(["solve", path, "--budget", "4,8", "--budget", "16", "--json"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["budget"] for r in records] == [4, 8, 16]
    for record in records:
        assert record["format"] == "memaudit.result/1" and record["status"] == "optimal"
        assert record["opt"] == pytest.approx(mf.solve(example, record["budget"]).value)


def test_cli_table_and_own_budgets(example: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_package(tmp_path, example)
    assert main(["solve", path]) == 0
    out = capsys.readouterr().out
    assert "upper_bound" in out and example["package_id"] in out
    assert out.count("optimal") == len(example["budgets"])


def test_cli_budget_fracs_and_limits(example: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_package(tmp_path, example)
    assert main(["solve", path, "--budget-fracs", "0.5", "--node-limit", "1", "--json"]) == 0
    (record,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    total = sum(c["cost"] for c in example["candidates"])
    assert record["budget"] == pytest.approx(0.5 * total) and record["budget_frac"] == 0.5
    assert record["status"] in ("optimal", "node_limit") and record["nodes"] == 1


def test_cli_errors(example: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = copy.deepcopy(example)
    del data["budgets"]
    path = write_package(tmp_path, data)
    assert main(["solve", path]) == 2
    assert "--budget" in capsys.readouterr().err
    assert main(["solve", path, "--budget", "-3"]) == 2
    assert main(["solve", path, "--budget", "4", "--time-limit", "-1"]) == 2
    broken = write_package(tmp_path, {"format": "memaudit.package/1", "package_id": "x", "units": "no"}, "bad.json")
    assert main(["solve", broken, path, "--budget", "4", "--json"]) == 3
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert lines[0]["status"] == "error" and lines[1]["status"] == "optimal"


def test_cli_certify(example: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("highspy")
    path = write_package(tmp_path, example)
    assert main(["solve", path, "--budget", "8", "--certify", "highs", "--json"]) == 0
    (record,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert record["certificate"]["agrees"] is True
