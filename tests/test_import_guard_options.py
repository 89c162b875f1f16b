"""score-store's full store over the budget scores 0 (also when OPT is 0), and
--group-capacity out of range is blamed on the option, not on the package."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memaudit_fast.cli.main import main
from memaudit_fast.model.examples import example_package_path
from memaudit_fast.systems import build_union, score_store
from memaudit_fast.systems.arbiter import Arbiter
from memaudit_fast.systems.records import ExportedMemory, SystemExport
from oracles.judges import ZeroJudge
from oracles.objective import brute_solver

EXAMPLE = example_package_path()


def union() -> Any:
    export = SystemExport("mem0", "two", [ExportedMemory("a", "Vik has taken up running", "memory"),
                                          ExportedMemory("b", "Vik runs every day", "memory")])
    return build_union(json.loads(EXAMPLE.read_text()), export, Arbiter(ZeroJudge()))


def test_full_store_over_a_zero_budget_scores_0_not_1() -> None:
    [rec] = score_store(union(), [0], solver=brute_solver)
    assert rec["opt"] == 0
    block = rec["systems"]["mem0"]
    assert block["store_cost"] > 0 and "full_store_ratio" in block["reasons"]
    assert block["full_store_ratio"] == 0.0
    assert block["full_store_ratio_over_package_opt"] == 0.0
    # The pruned stores fit (they are empty): 0 of an OPT of 0 is 1, as 'memaudit score' says.
    assert block["recency_pruned_ratio"] == 1.0 and block["upper_pruned_ratio"] == 1.0


def test_full_store_that_fits_keeps_its_ratio() -> None:
    [rec] = score_store(union(), [1000], solver=brute_solver)
    block = rec["systems"]["mem0"]
    assert "full_store_ratio" not in block["reasons"]
    assert block["full_store_ratio"] == pytest.approx(block["full_store_value"] / rec["opt"])


def test_score_store_cli_prints_0_for_the_full_store_over_budget(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "u.json"
    path.write_text(json.dumps(union().data))
    assert main(["score-store", str(path), "--budgets", "0", "--json"]) == 0
    record = json.loads(capsys.readouterr().out.splitlines()[0])
    assert record["systems"]["mem0"]["full_store_ratio"] == 0.0
    assert main(["score-store", str(path), "--budgets", "0"]) == 0
    out = capsys.readouterr().out
    header, _, row = out.splitlines()[:3]
    assert row.split()[header.split().index("full")] == "0"


@pytest.mark.parametrize("value", ["99999999999999999999", "9007199254740993", "0", "-1", "two", "1_000"])
def test_group_capacity_out_of_range_names_the_option(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", str(EXAMPLE), "--group-capacity", value]) == 2
    err = capsys.readouterr().err
    assert "--group-capacity" in err and "2^53" in err
    assert "objective.group_capacity" not in err


def test_group_capacity_in_range_is_taken(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", str(EXAMPLE), "--group-capacity", "9007199254740992", "--json"]) == 0
