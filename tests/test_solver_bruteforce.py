"""The exact solver against brute force on small random packages (every saturation family)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memaudit_fast as mf
from memaudit_fast import _core
from oracles.exact import (
    Instance,
    brute_force,
    is_feasible,
    objective,
    saturation_table,
)
from strategies import instances, packages

TOL = 1e-9


def assert_exact(inst: Instance, budget: float, result: Any) -> None:
    opt, _ = brute_force(inst, budget)
    selected = [int(u) for u in result.selected]
    assert result.status == "optimal" and result.proven_optimal
    assert result.value == pytest.approx(opt, rel=TOL, abs=TOL)
    assert is_feasible(inst, selected, budget)
    assert sorted(selected) == selected
    assert result.value == pytest.approx(objective(inst, selected), rel=1e-12, abs=1e-12)
    assert result.cost == pytest.approx(sum(inst.cost[u] for u in selected), abs=1e-12)
    # Proven: OPT <= upper_bound; and a completed search pruned everything at value + tol.
    slack = TOL * max(1.0, opt)
    assert opt - slack <= result.upper_bound <= result.value + 1.001 * slack
    expected_gap = (result.upper_bound - result.value) / result.upper_bound if result.upper_bound > 0 else 0.0
    assert result.gap == pytest.approx(expected_gap, abs=1e-15)


@given(inst=instances(), budget=st.sampled_from([0.0, 1.0, 2.0, 3.0, 4.5, 7.0, 100.0]))
@settings(max_examples=150)
def test_matches_brute_force(inst: Instance, budget: float) -> None:
    (result,) = _core.solve(inst.problem(), [budget])
    assert_exact(inst, budget, result)


@given(inst=instances(max_candidates=14, max_units=5))
@settings(max_examples=40)
def test_sweep_matches_brute_force_per_budget(inst: Instance) -> None:
    budgets = [6.0, 0.0, 2.0, 2.0, 3.5, 50.0]  # unsorted, with a repeat: results keep this order
    results = _core.solve(inst.problem(), budgets)
    assert [r.budget for r in results] == budgets
    for budget, result in zip(budgets, results):
        assert_exact(inst, budget, result)
    values = [r.value for r in sorted(results, key=lambda r: r.budget)]
    # OPT(B) never decreases with B, up to the rounding of F: two stores of one worth summed in
    # another order may differ in the last bit (5.7 and 5.699999999999999 at B = 2 and 3.5).
    assert all(later >= earlier - 1e-12 * max(1.0, abs(earlier)) for earlier, later in itertools.pairwise(values))


@given(data=packages(max_candidates=9, max_units=5))
@settings(max_examples=60)
def test_package_api_matches_brute_force(data: dict) -> None:
    from itertools import product

    from oracles.objective import objective as package_objective

    budget = float(data["budgets"][0])
    result = mf.solve(data, budget)
    groups: dict[str, list[dict]] = {}
    for c in data["candidates"]:
        groups.setdefault(c.get("group", c.get("experience_id", "\x00" + c["candidate_id"])), []).append(c)
    best = 0.0
    for choice in product(*[[None, *members] for members in groups.values()]):
        store = [c for c in choice if c is not None]
        if sum(float(c["cost"]) for c in store) <= budget + 1e-12 * max(1.0, budget):
            best = max(best, package_objective(data, [c["candidate_id"] for c in store]))
    assert result.status == "optimal"
    assert result.value == pytest.approx(best, rel=TOL, abs=TOL)
    assert result.value == pytest.approx(package_objective(data, list(result.selected)), rel=1e-12, abs=1e-12)
    assert result.upper_bound >= best - TOL * max(1.0, best)


def test_identical_siblings_keep_exactly_one() -> None:
    # Three identical candidates in one group, a fourth covering less at the same cost and a
    # fifth covering more but costing more: dominance leaves the first and the fifth.
    kinds, zs, hs = saturation_table()
    inst = Instance(
        cost=np.array([2.0, 2.0, 2.0, 2.0, 3.0]), group_of=np.zeros(5, dtype=np.int32), num_groups=1,
        weight=np.array([1.0, 2.0]), indptr=np.array([0, 2, 4, 6, 7, 9], dtype=np.int64),
        indices=np.array([0, 1, 0, 1, 0, 1, 0, 0, 1], dtype=np.int32),
        values=np.array([1.0, 0.5, 1.0, 0.5, 1.0, 0.5, 1.0, 1.0, 1.0]),
        saturation_of=np.zeros(2, dtype=np.int32), kinds=kinds, zs=zs, hs=hs,
    )
    results = _core.solve(inst.problem(), [2.0, 3.0])
    assert results[0].reduced_candidates == 2
    assert list(results[0].selected) == [0] and results[0].value == pytest.approx(2.0)
    assert list(results[1].selected) == [4] and results[1].value == pytest.approx(3.0)


def test_coverage_dominance_is_coordinate_wise() -> None:
    # u1 costs more than u0 and covers less in total, but more of unit 1: not dominated.
    kinds, zs, hs = saturation_table()
    inst = Instance(
        cost=np.array([1.0, 2.0]), group_of=np.zeros(2, dtype=np.int32), num_groups=1,
        weight=np.array([1.0, 5.0]), indptr=np.array([0, 2, 4], dtype=np.int64),
        indices=np.array([0, 1, 0, 1], dtype=np.int32), values=np.array([1.0, 0.1, 0.0001, 0.5]),
        saturation_of=np.zeros(2, dtype=np.int32), kinds=kinds, zs=zs, hs=hs,
    )
    (result,) = _core.solve(inst.problem(), [2.0])
    assert result.reduced_candidates == 2
    assert list(result.selected) == [1] and result.value == pytest.approx(2.5001)


def test_worthless_and_unaffordable_candidates() -> None:
    kinds, zs, hs = saturation_table()
    inst = Instance(
        cost=np.array([1.0, 0.0, 9.0, 1.0]), group_of=np.arange(4, dtype=np.int32), num_groups=4,
        weight=np.array([0.0, 1.0]), indptr=np.array([0, 1, 1, 2, 3], dtype=np.int64),
        indices=np.array([0, 1, 1], dtype=np.int32), values=np.array([1.0, 1.0, 0.5]),
        saturation_of=np.zeros(2, dtype=np.int32), kinds=kinds, zs=zs, hs=hs,
    )
    (result,) = _core.solve(inst.problem(), [5.0])
    assert result.reduced_candidates == 2  # u0 covers a weight-0 unit, u1 covers nothing
    assert list(result.selected) == [3] and result.value == pytest.approx(0.5)


def test_empty_problem() -> None:
    kinds, zs, hs = saturation_table()
    inst = Instance(
        cost=np.zeros(0), group_of=np.zeros(0, dtype=np.int32), num_groups=0, weight=np.ones(2),
        indptr=np.zeros(1, dtype=np.int64), indices=np.zeros(0, dtype=np.int32), values=np.zeros(0),
        saturation_of=np.zeros(2, dtype=np.int32), kinds=kinds, zs=zs, hs=hs,
    )
    (result,) = _core.solve(inst.problem(), [3.0])
    assert result.status == "optimal" and result.value == 0.0 and result.upper_bound == 0.0
    assert len(result.selected) == 0
