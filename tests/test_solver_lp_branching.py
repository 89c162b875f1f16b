"""LP branch-and-cut after the root LP (solve/lp_branching.py) and its place in the race.

It never proves a value below OPT (brute force over small random packages, for every value a
store takes, OPT among them), a store it returns is feasible and worth what it says, and on a
long dialogue whose root LP ends one lattice step above OPT it proves OPT in a few nodes, which
the race then reports as the root LP's proof."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_fast import _core
from memaudit_fast.model.compiled import budget_limit, compile_package
from memaudit_fast.model.package import Package
from memaudit_fast.solve.exact import lp_bound_proves, solve
from memaudit_fast.solve.lp_branching import prove_at_most
from memaudit_fast.solve.milp import build_milp, lattice_floor
from memaudit_fast.solve.root_lp import root_lp
from oracles.search_stub import SearchStub
from strategies import packages


def store_values(compiled, budget: float) -> dict[float, tuple[int, ...]]:
    """Every value a feasible store takes (one store each), by brute force."""
    groups: dict[int, list[int]] = {}
    for u in range(compiled.num_candidates):
        groups.setdefault(int(compiled.group_of[u]), []).append(u)
    values: dict[float, tuple[int, ...]] = {}
    for choice in itertools.product(*[[None, *members] for members in groups.values()]):
        store = tuple(u for u in choice if u is not None)
        if sum(float(compiled.cost[u]) for u in store) <= budget_limit(budget):
            values.setdefault(float(compiled.objective(list(store))), store)
    return values


def proves_for(compiled):
    granularity = float(_core.objective_granularity(compiled.problem))
    return lambda value, bound: lp_bound_proves(value, bound, granularity)


@settings(max_examples=120, deadline=None)
@given(data=packages(max_candidates=9, max_units=4, extras=False), frac=st.sampled_from([0.2, 0.4, 0.7, 1.0]),
       pick=st.integers(0, 3))
def test_the_tree_never_proves_a_value_below_opt(data, frac, pick):
    compiled = compile_package(Package.from_dict(data))
    budget = round(frac * float(compiled.cost.sum()), 2)
    model = build_milp(compiled, budget)
    lp = root_lp(compiled, model)
    if lp is None or lp.rows is None:
        return
    values = sorted(store_values(compiled, budget), reverse=True)
    opt = values[0]
    value = values[min(pick, len(values) - 1)]  # OPT, or a store's value below it
    proof = prove_at_most(compiled, budget, lp, value, nodes=10_000, seconds=30.0, proves=proves_for(compiled))
    if proof is None:
        return
    assert proof.value >= opt - 1e-9 * max(1.0, abs(opt))
    if proof.store is not None:
        store = list(proof.store)
        assert len({int(compiled.group_of[u]) for u in store}) == len(store)
        assert sum(float(compiled.cost[u]) for u in store) <= budget_limit(budget)
        assert float(compiled.objective(store)) == pytest.approx(proof.value, abs=1e-9)
    # The LP is left with its own column bounds: a second tree from it proves the same.
    again = prove_at_most(compiled, budget, lp, proof.value, nodes=10_000, seconds=30.0, proves=proves_for(compiled))
    assert again is not None and again.value == pytest.approx(proof.value, abs=1e-9)


@pytest.fixture(scope="module")
def long_dialogue():
    from oracles.dialogue import dialogue_package
    from oracles.packages import compiled_at_fraction

    return compiled_at_fraction(dialogue_package(3000, seed=6), 0.2)


def test_a_root_one_step_above_opt_is_closed_by_a_few_nodes(long_dialogue):
    compiled, budget = long_dialogue
    granularity = float(_core.objective_granularity(compiled.problem))
    exact = solve(compiled, budget=budget, finish=None)  # the branch-and-bound alone
    assert exact.proven_optimal
    lp = root_lp(compiled, build_milp(compiled, budget), seconds=5.0, mir_rounds=0)  # the families alone: 1308.80
    assert lp is not None and lp.rows is not None
    assert lattice_floor(lp.bound, granularity) > exact.value + granularity / 2  # the LP alone does not prove it
    proof = prove_at_most(compiled, budget, lp, exact.value, nodes=64, seconds=10.0, proves=proves_for(compiled))
    assert proof is not None and proof.nodes <= 16
    # One step below OPT is not proven: a store worth OPT is in the tree.
    below = prove_at_most(compiled, budget, lp, exact.value - granularity, nodes=64, seconds=10.0,
                          proves=proves_for(compiled))
    assert below is None or below.value >= exact.value - 1e-9 * exact.value


def test_the_race_branches_only_next_to_a_good_store_and_stops_the_search_when_it_proves(long_dialogue):
    import threading

    from memaudit_fast.solve.backends import HighsStop
    from memaudit_fast.solve.race import _branch_below_lp, _Race

    compiled, budget = long_dialogue
    exact = solve(compiled, budget=budget, finish=None)
    store = [compiled.candidate_ids.index(i) for i in exact.selected]
    lp = root_lp(compiled, build_milp(compiled, budget), seconds=5.0, mir_rounds=0)
    # Far under the LP's bound (the empty store): no tree, nothing stopped.
    race, search = _Race(HighsStop(), threading.Thread()), SearchStub(0.0, [])
    _branch_below_lp(compiled, budget, race, lp, search)
    assert race.lp_proof is None and not search.stopped and not race.stop.is_set()
    # The optimal store, one step under it: proven, and both engines are told.
    race, search = _Race(HighsStop(), threading.Thread()), SearchStub(exact.value, store)
    _branch_below_lp(compiled, budget, race, lp, search)
    assert race.lp_proof is not None and race.lp_proof[1] == pytest.approx(exact.value, abs=1e-9)
    assert search.stopped == [budget] and race.stop.is_set()


def test_a_raced_solve_of_that_package_ends_at_opt(long_dialogue):
    compiled, budget = long_dialogue
    result = solve(compiled, budget=budget, time_limit=60)
    exact = solve(compiled, budget=budget, finish=None)
    assert result.proven_optimal and result.value == pytest.approx(exact.value, abs=1e-9)
