"""One budget rule at every entry point: numbers as Python or numpy gives them, one message."""

from __future__ import annotations

import numpy as np
import pytest

import memaudit_fast as ma
from memaudit_fast import _core
from memaudit_fast.model.compiled import COST_SLACK, budget_limit, check_budget, check_budgets
from memaudit_fast.model.examples import example_package_path


def test_the_slack_is_the_cores_own() -> None:
    assert COST_SLACK == _core.COST_SLACK == 1e-12
    assert budget_limit(0.5) == 0.5 + 1e-12
    assert budget_limit(1e6) == 1e6 + 1e-12 * 1e6


@pytest.mark.parametrize("value", [8, 8.0, np.int64(8), np.float32(8), np.float64(8.0), np.int32(8)])
def test_numpy_scalars_are_budgets(value: object) -> None:
    assert check_budget(value) == 8.0
    pkg = ma.load_package(example_package_path())
    assert ma.solve(pkg, value).budget == 8.0
    assert ma.run_writer(pkg, value, "gvt").budget == 8.0
    assert ma.score(pkg, [], value).budget == 8.0


def test_numpy_arrays_are_budget_lists() -> None:
    pkg = ma.load_package(example_package_path())
    results = ma.solve(pkg, budgets=np.array([8, 16]))
    assert [r.budget for r in results] == [8.0, 16.0]
    assert check_budgets(np.array(4.0)) == [4.0]
    with pytest.raises(ma.UsageError, match="flat list"):
        check_budgets(np.ones((2, 2)))


@pytest.mark.parametrize(("value", "message"), [
    (True, "must be a number"), ("8", "must be a number"), ([1, "x"], "must be a number"),
    (-1, "finite and >= 0"), (float("nan"), "finite and >= 0"), (float("inf"), "finite and >= 0"),
    (np.bool_(True), "must be a number"),
])
def test_bad_budgets_get_the_same_message_everywhere(value: object, message: str) -> None:
    pkg = ma.load_package(example_package_path())
    for call in (lambda: ma.solve(pkg, value), lambda: ma.run_writer(pkg, value, "gvt"),
                 lambda: ma.score(pkg, [], value)):
        with pytest.raises(ma.UsageError, match=message):
            call()
