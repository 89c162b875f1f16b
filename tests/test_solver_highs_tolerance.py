"""A proof by HiGHS holds to the solver's own promise (value >= OPT - 1e-9 max(1, |value|), bound
>= OPT) where no lattice of worths stands between HiGHS's tolerances and a better store."""

from __future__ import annotations

import pytest

import memaudit_fast as ma
from oracles.packages import float_weighted


@pytest.fixture(scope="module")
def case() -> tuple[ma.Package, float, ma.SolveResult]:
    package = ma.Package.from_dict(float_weighted(42))
    budget = package.budgets[0]
    assert budget == 70.167
    alone = ma.solve(package, budget=budget, finish=None)  # the branch-and-bound's own proof
    assert alone.status == "optimal"
    return package, budget, alone


@pytest.mark.parametrize("finish", ["highs", "auto"])
def test_highs_proves_the_optimum_of_a_float_weighted_package_not_a_store_under_it(case, finish) -> None:
    package, budget, alone = case
    raced = ma.solve(package, budget=budget, finish=finish, handoff_after=0.0)
    assert raced.status == "optimal"
    assert raced.value >= alone.value - 1e-9 * max(1.0, abs(alone.value))
    assert raced.upper_bound >= alone.value - 1e-9 * max(1.0, abs(alone.value))
    assert alone.value >= raced.value - 1e-9 * max(1.0, abs(raced.value))
