"""Honest anytime results: limits, cancellation, Ctrl-C, threads, bad inputs."""

from __future__ import annotations

import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_fast import _core
from oracles.exact import (
    Instance,
    brute_force,
    is_feasible,
    objective,
    saturation_table,
    synthetic_instance,
)
from strategies import instances

TOL = 1e-9


def hard_instance() -> tuple[object, float]:
    # Hundreds of nodes even with the root's coverage cuts.
    inst = synthetic_instance(300, seed=2, kind="memaudit")
    return inst, float(round(0.05 * inst.cost.sum()))


@given(inst=instances(max_candidates=12), budget=st.sampled_from([1.0, 3.0, 6.0]),
       node_limit=st.sampled_from([0, 1, 2, 3]))
@settings(max_examples=80)
def test_node_limit_never_claims_more_than_proven(inst, budget: float, node_limit: int) -> None:
    opt, _ = brute_force(inst, budget)
    (result,) = _core.solve(inst.problem(), [budget], node_limit=node_limit)
    assert result.status in ("optimal", "node_limit")
    assert result.upper_bound >= opt - TOL * max(1.0, opt)
    assert result.value <= opt + TOL * max(1.0, opt)
    assert is_feasible(inst, [int(u) for u in result.selected], budget)
    if result.status == "optimal":
        assert result.value == pytest.approx(opt, rel=TOL, abs=TOL)
    else:
        assert not result.proven_optimal


@pytest.mark.parametrize("node_limit", [1, 5, 30])
def test_node_limit_on_a_hard_package(node_limit: int) -> None:
    inst, budget = hard_instance()
    (full,) = _core.solve(inst.problem(), [budget])
    assert full.status == "optimal" and full.nodes > 30
    (limited,) = _core.solve(inst.problem(), [budget], node_limit=node_limit)
    assert limited.status == "node_limit" and not limited.proven_optimal
    assert limited.nodes == node_limit
    assert limited.value <= full.value + 1e-9
    assert limited.upper_bound >= full.value - 1e-9
    assert limited.gap == pytest.approx((limited.upper_bound - limited.value) / limited.upper_bound)
    assert limited.value == pytest.approx(objective(inst, [int(u) for u in limited.selected]))


def test_time_limit_zero_returns_the_root_bound() -> None:
    inst, budget = hard_instance()
    (full,) = _core.solve(inst.problem(), [budget])
    (limited,) = _core.solve(inst.problem(), [budget], time_limit=0.0)
    assert limited.status == "time_limit" and not limited.proven_optimal
    assert limited.nodes == 1
    assert limited.upper_bound >= full.value - 1e-9 and limited.value <= full.value + 1e-9


def test_cancel_token_set_before_the_solve() -> None:
    inst, budget = hard_instance()
    token = _core.CancelToken()
    token.cancel()
    assert token.cancelled
    results = _core.solve(inst.problem(), [budget, 2 * budget], cancel=token)
    assert [r.status for r in results] == ["interrupted", "interrupted"]
    (full,) = _core.solve(inst.problem(), [budget])
    assert results[0].upper_bound >= full.value - 1e-9
    token.reset()
    assert not token.cancelled
    assert _core.solve(inst.problem(), [budget], cancel=token)[0].status == "optimal"


def long_solve_instance() -> tuple[object, float]:
    # A strongly correlated knapsack (profit = weight + constant, one unit per candidate):
    # minutes to prove, and no coverage cut applies.
    rng = np.random.default_rng(0)
    w = rng.integers(1000, 10000, size=300).astype(np.float64)
    n = len(w)
    kinds, zs, hs = saturation_table()
    inst = Instance(
        cost=w, group_of=np.arange(n, dtype=np.int32), num_groups=n, weight=w + 1000.0,
        indptr=np.arange(n + 1, dtype=np.int64), indices=np.arange(n, dtype=np.int32), values=np.ones(n),
        saturation_of=np.zeros(n, dtype=np.int32), kinds=kinds, zs=zs, hs=hs,
    )
    return inst, float(w.sum() // 2)


def test_cancel_from_another_thread() -> None:
    inst, budget = long_solve_instance()
    token = _core.CancelToken()
    timer = threading.Timer(0.3, token.cancel)
    timer.start()
    try:
        (result,) = _core.solve(inst.problem(), [budget], cancel=token, time_limit=60)
    finally:
        timer.cancel()
    assert result.status == "interrupted"
    assert result.value <= result.upper_bound <= result.root_bound
    assert result.seconds < 30


@pytest.mark.parametrize("how", ["cancel", "ctrl-c"])
def test_a_sweep_stopped_in_one_budget_does_not_search_the_others(how: str) -> None:
    # Each budget's warm start and root took seconds on large packages, and a stop came only
    # after all of them. The budgets not begun now keep the stopped budget's store (budgets are
    # solved in increasing order, so it fits) and a bound that holds: F of every candidate.
    if how == "ctrl-c" and os.name != "posix":
        pytest.skip("needs POSIX signals")
    inst, budget = long_solve_instance()
    token = _core.CancelToken()
    timer = threading.Timer(0.3, token.cancel) if how == "cancel" else \
        threading.Timer(0.3, os.kill, args=(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        results = _core.solve(inst.problem(), [budget, 1.2 * budget, 1.5 * budget], cancel=token, time_limit=60)
    finally:
        timer.cancel()
    first, *rest = results
    assert first.status == "interrupted" and first.nodes > 0
    everything = objective(inst, list(range(inst.num_candidates)))
    for result in rest:
        assert result.status == "interrupted" and not result.proven_optimal and result.nodes == 0
        assert list(result.selected) == list(first.selected) and result.value == pytest.approx(first.value)
        assert is_feasible(inst, [int(u) for u in result.selected], result.budget)
        assert result.upper_bound == pytest.approx(everything) and result.upper_bound >= result.value
        assert result.gap == pytest.approx((result.upper_bound - result.value) / result.upper_bound)


@pytest.mark.skipif(os.name != "posix", reason="needs POSIX signals")
def test_ctrl_c_interrupts_the_search_and_returns_the_incumbent() -> None:
    inst, budget = long_solve_instance()
    timer = threading.Timer(0.3, os.kill, args=(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        (result,) = _core.solve(inst.problem(), [budget], time_limit=60)
    finally:
        timer.cancel()
    assert result.status == "interrupted"
    assert result.value <= result.upper_bound
    assert result.seconds < 30


def test_parallel_solves_agree_with_sequential_ones() -> None:
    jobs = [synthetic_instance(200, seed=s, kind=k) for s in range(3) for k in ("memaudit", "tie_heavy")]
    budgets = [[float(round(f * inst.cost.sum())) for f in (0.02, 0.05, 0.1)] for inst in jobs]
    problems = [inst.problem() for inst in jobs]
    sequential = [_core.solve(p, b) for p, b in zip(problems, budgets)]
    # The same Problem objects are shared by two threads each.
    with ThreadPoolExecutor(max_workers=4) as pool:
        parallel = list(pool.map(_core.solve, problems + problems, budgets + budgets))
    for seq, par in zip(sequential + sequential, parallel):
        assert [r.value for r in seq] == [r.value for r in par]
        assert all(r.status == "optimal" for r in par)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"budgets": [-1.0]}, "budgets"),
        ({"budgets": [float("nan")]}, "budgets"),
        ({"budgets": [1.0], "time_limit": -1.0}, "time_limit"),
        ({"budgets": [1.0], "node_limit": -1}, "node_limit"),
        ({"budgets": [1.0], "relative_tolerance": -1e-3}, "relative_tolerance"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs: dict, message: str) -> None:
    inst, _ = hard_instance()
    with pytest.raises(ValueError, match=message):
        _core.solve(inst.problem(), **kwargs)
