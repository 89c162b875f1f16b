"""The root LP with the search's cuts (solve/root_lp.py) and the bound it hands the search.

The dual bound is never below OPT (brute force over small random packages, at HiGHS's duals and
at random multipliers); the lattice rule never calls a store optimal that a better lattice
point could beat; a search given a bound prunes with it and says so; and on a long dialogue the
LP closes a root the Lagrangian leaves open."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_fast import _core
from memaudit_fast.model.compiled import budget_limit, compile_package
from memaudit_fast.model.package import Package
from memaudit_fast.solve.backends import solve_highs
from memaudit_fast.solve.exact import lp_bound_proves, solve
from memaudit_fast.solve.milp import build_milp
from memaudit_fast.solve.root_lp import dual_bound, root_lp_bound
from strategies import packages


def brute_opt(compiled, budget: float) -> float:
    groups: dict[int, list[int]] = {}
    for u in range(compiled.num_candidates):
        groups.setdefault(int(compiled.group_of[u]), []).append(u)
    best = 0.0
    for choice in itertools.product(*[[None, *members] for members in groups.values()]):
        store = [u for u in choice if u is not None]
        if sum(float(compiled.cost[u]) for u in store) <= budget_limit(budget):
            best = max(best, float(compiled.objective(store)))
    return best


@settings(max_examples=150, deadline=None)
@given(data=packages(max_candidates=9, max_units=4, extras=False), frac=st.sampled_from([0.2, 0.4, 0.7, 1.0]),
       seed=st.integers(0, 2**16))
def test_the_root_lp_bound_is_never_below_opt(data, frac, seed):
    compiled = compile_package(Package.from_dict(data))
    budget = round(frac * float(compiled.cost.sum()), 2)
    model = build_milp(compiled, budget)
    opt = brute_opt(compiled, budget)
    bound = root_lp_bound(compiled, model)
    if model.approximation != "exact":
        assert bound is None
        return
    if bound is not None:
        assert bound >= opt - 1e-9 * max(1.0, opt)
    # Weak duality holds at any multipliers, not only at the LP's.
    if model.row_upper.size:
        rng = np.random.default_rng(seed)
        lengths = np.diff(model.row_starts)
        rows = np.repeat(np.arange(lengths.size), lengths)
        for _ in range(3):
            pi = rng.exponential(size=model.row_upper.size) * rng.integers(0, 2, size=model.row_upper.size)
            any_pi = dual_bound(model.objective, model.col_lower, model.col_upper, model.row_index.astype(np.int64),
                                model.row_value, rows, model.row_upper, pi)
            assert any_pi >= opt - 1e-9 * max(1.0, opt)


def test_the_lattice_rule_needs_the_value_and_the_bound_on_either_side_of_one_step():
    # F in 0.5 Z: a bound of 10.6 allows OPT 10.5, so 10.3 (a store off the lattice) is not
    # proven, 10.5 is; a bound a hair under a lattice point (rounding) still allows it.
    assert not lp_bound_proves(10.3, 10.6, 0.5)
    assert lp_bound_proves(10.5, 10.6, 0.5)
    assert not lp_bound_proves(10.0, 10.5 - 1e-13, 0.5)
    assert lp_bound_proves(10.5, 10.5 + 1e-9, 0.5)
    # Without a lattice only the search's tolerance separates them.
    assert lp_bound_proves(10.5, 10.5 + 1e-9, 0.0)
    assert not lp_bound_proves(10.5, 10.5 + 1e-6, 0.0)
    # 0.05 is not a binary fraction: 1297.5 / 0.05 rounds below 25950 and must still count.
    assert not lp_bound_proves(1297.45, 1297.5, 0.05)
    assert lp_bound_proves(1297.5, 1297.5 + 2e-9, 0.05)


def _hard():
    from oracles.packages import hard_package

    # Its root finds the optimal store (154.1) but bounds it at 179.4.
    compiled = compile_package(hard_package(70, seed=2))
    return compiled, round(0.1 * float(compiled.cost.sum()), 2)


def test_a_search_given_a_bound_prunes_with_it_and_says_so():
    compiled, budget = _hard()
    (alone,) = _core.solve(compiled.problem, [budget], node_limit=1)
    opt = solve(compiled, budget, finish=None).value
    assert alone.status == "node_limit" and alone.upper_bound > opt + 1  # the root alone does not close it
    stop = _core.BudgetStop()
    stop.bound(budget, opt)
    (given_bound,) = _core.solve(compiled.problem, [budget], node_limit=1, budget_stop=stop)
    assert given_bound.status == "optimal" and given_bound.external_bound_used
    assert given_bound.value == pytest.approx(opt, rel=1e-12)
    # A bound for another budget is not this one's.
    other = _core.BudgetStop()
    other.bound(budget + 1.0, opt)
    (elsewhere,) = _core.solve(compiled.problem, [budget], node_limit=1, budget_stop=other)
    assert elsewhere.status == "node_limit" and not elsewhere.external_bound_used
    assert math.isinf(other.bound_of(budget))


def test_the_root_lp_closes_a_dialogue_root_the_lagrangian_leaves_open():
    from oracles.dialogue import dialogue_package

    compiled = compile_package(Package.from_dict(dialogue_package(3000, seed=2)))
    budget = float(round(0.2 * float(compiled.cost.sum())))
    (root,) = _core.solve(compiled.problem, [budget], node_limit=1)
    bound = root_lp_bound(compiled, build_milp(compiled, budget))
    assert bound is not None and bound < root.upper_bound
    stop = _core.BudgetStop()
    stop.bound(budget, bound)
    (closed,) = _core.solve(compiled.problem, [budget], node_limit=1, budget_stop=stop)
    assert root.status == "node_limit" and closed.status == "optimal" and closed.external_bound_used
    reference = solve_highs(build_milp(compiled, budget), time_limit=60)
    assert reference.status == "optimal" and closed.value == pytest.approx(reference.objective, rel=1e-7)
    # The default solve reports who proved it.
    assert solve(compiled, budget).proved_by in ("root_lp", "branch_and_bound", "highs")


def test_each_round_of_the_root_lp_hands_on_its_bound_as_it_comes():
    from memaudit_fast.solve.root_lp import root_lp, root_lp_seconds, size_factor
    from oracles.dialogue import dialogue_package

    compiled = compile_package(Package.from_dict(dialogue_package(3000, seed=2)))
    budget = float(round(0.2 * float(compiled.cost.sum())))
    heard: list[float] = []
    lp = root_lp(compiled, build_milp(compiled, budget), seconds=5.0, on_bound=heard.append)
    assert lp is not None and heard  # one bound per LP solved, each no worse than the one before
    assert all(later <= earlier for earlier, later in itertools.pairwise(heard))
    assert heard[-1] == lp.bound
    # The stage's time: 0.15 s up to 3,000 candidates, growing as the size's 1.5th power beyond.
    assert root_lp_seconds(1000) == root_lp_seconds(3000) == pytest.approx(0.15)
    assert size_factor(12_000) == 4.0 and root_lp_seconds(12_000) == pytest.approx(0.15 * 8)


def test_a_store_of_highs_that_meets_the_lp_bound_ends_the_race():
    import threading

    from memaudit_fast.solve.backends import HighsStop
    from memaudit_fast.solve.exact import _held_to_lp_bound, _Race

    compiled, budget = _hard()
    best = solve(compiled, budget, finish=None)
    index = {c: i for i, c in enumerate(compiled.candidate_ids)}
    store = tuple(index[c] for c in best.selected)
    race = _Race(HighsStop(), threading.Thread(), lp_bound=best.value + 1e-10)
    stop = _core.BudgetStop()
    heard = _held_to_lp_bound(compiled, budget, race, stop)
    heard(store[:-1])  # worth less: nothing happens
    assert race.lp_proof is None and not race.stop.is_set() and math.isnan(stop.budget)
    heard(store + (store[0],) if len(store) > 1 else store + store)  # infeasible (a group twice): ignored
    assert race.lp_proof is None
    heard(store)
    assert race.lp_proof == (tuple(sorted(store)), pytest.approx(best.value, rel=1e-12))
    assert race.stop.is_set() and stop.budget == budget


def test_each_solve_of_a_highs_object_gets_its_own_time_beyond_the_runs_before_it():
    # HiGHS's time_limit counts the object's run time over all its solves: the next solve's
    # limit is that run time plus what is left, never what is left alone.
    from memaudit_fast.solve.backends import limit_next_solve

    class Clocked:
        def __init__(self, ran: float) -> None:
            self.ran, self.options = ran, {}

        def getRunTime(self) -> float:
            return self.ran

        def setOptionValue(self, name: str, value: float) -> None:
            self.options[name] = value

    h = Clocked(5.0)
    limit_next_solve(h, 0.25)
    assert h.options["time_limit"] == pytest.approx(5.25)
    limit_next_solve(h, -1.0)  # nothing left: the solve still starts, for a millisecond
    assert h.options["time_limit"] == pytest.approx(5.001)


def test_the_root_lp_rounds_and_the_lp_tree_limit_each_solve_past_the_earlier_ones(monkeypatch):
    from memaudit_fast.solve import backends
    from memaudit_fast.solve.lp_branching import prove_at_most
    from memaudit_fast.solve.root_lp import root_lp
    from oracles.dialogue import dialogue_package

    seen: list[tuple[float, float]] = []  # (run time so far, the limit set) per solve
    real = backends.limit_next_solve

    def recording(h, seconds):
        real(h, seconds)
        seen.append((float(h.getRunTime()), float(h.getOptionValue("time_limit")[1])))

    monkeypatch.setattr(backends, "limit_next_solve", recording)
    compiled = compile_package(Package.from_dict(dialogue_package(1000, seed=0)))
    budget = float(round(0.02 * float(compiled.cost.sum())))
    lp = root_lp(compiled, build_milp(compiled, budget), seconds=30.0)
    assert lp is not None and lp.rows is not None
    rounds = len(seen)
    assert rounds >= 3  # cut rounds after the first LP
    assert seen[-1][0] > 0 and all(limit > ran for ran, limit in seen)
    granularity = float(_core.objective_granularity(compiled.problem))
    prove_at_most(compiled, budget, lp, lp.bound - 100 * granularity, seconds=30.0, nodes=3,
                  proves=lambda worth, bound: bound <= worth)
    assert len(seen) > rounds and all(limit > ran for ran, limit in seen)


def _root_lp_with_pairs(monkeypatch, compiled, budget, with_pairs: bool):
    """The root LP of ``budget``, with or without the envelope cuts (cuts.hpp's third family)."""
    from memaudit_fast.solve import root_lp as stage

    separate = _core.separate_coverage_cuts

    class Core:
        def __getattr__(self, name):
            if name == "separate_coverage_cuts":
                return lambda problem, x, pairs=True: separate(problem, x, pairs and with_pairs)
            return getattr(_core, name)

    with monkeypatch.context() as patch:
        patch.setattr(stage, "_core", Core())
        return stage.root_lp(compiled, build_milp(compiled, budget), seconds=5.0, mir_rounds=0)


def test_the_envelope_cuts_take_the_root_lp_to_highs_root_bound_on_memaudit_small(monkeypatch):
    # MEMAUDIT-Small x70 (seed 0) at 10%: the search's two families leave the LP at 1317.31875;
    # with the envelope cuts over two groups it ends at 1317.2125, the bound of HiGHS's root
    # (OPT 1316.9625).
    from memaudit_fast.suites.small import generate_package

    compiled = compile_package(Package.from_dict(generate_package("base", seed=0, scale=70)))
    budget = float(round(0.1 * float(compiled.cost.sum())))
    without = _root_lp_with_pairs(monkeypatch, compiled, budget, with_pairs=False)
    with_pairs = _root_lp_with_pairs(monkeypatch, compiled, budget, with_pairs=True)
    assert without is not None and with_pairs is not None
    reference = solve_highs(build_milp(compiled, budget), time_limit=60)
    assert reference.status == "optimal" and reference.objective is not None
    opt = reference.objective
    assert without.bound == pytest.approx(1317.31875, abs=1e-6)
    assert with_pairs.bound == pytest.approx(1317.2125, abs=1e-6)
    assert opt - 1e-7 * opt <= with_pairs.bound < without.bound


def test_envelope_cuts_that_do_not_lower_the_lp_are_taken_out_again(monkeypatch):
    # A long dialogue of 3,000 candidates (seed 6) at 40%: the envelope cuts do not lower the
    # LP (1308.80), so the stage ends where the two families leave it, rows and vertex, and
    # the bound it hands on is evaluated over those rows only.
    from oracles.dialogue import dialogue_package

    compiled = compile_package(Package.from_dict(dialogue_package(3000, seed=6)))
    budget = float(round(0.4 * float(compiled.cost.sum())))
    without = _root_lp_with_pairs(monkeypatch, compiled, budget, with_pairs=False)
    with_pairs = _root_lp_with_pairs(monkeypatch, compiled, budget, with_pairs=True)
    assert without is not None and with_pairs is not None and with_pairs.rows is not None
    assert with_pairs.bound == pytest.approx(without.bound, rel=1e-9)
    assert with_pairs.rows.num_rows == without.rows.num_rows == with_pairs.rows.highs.getNumRow()
    assert np.array_equal(with_pairs.x, without.x)
    rows = with_pairs.rows
    rows._join()
    assert rows.uppers[0].size == rows.num_rows and int(rows.entry_rows[0].max()) < rows.num_rows
    # Solved again from the basis it was left at, the LP is where it was.
    rows.highs.run()
    assert rows.highs.getInfo().objective_function_value == pytest.approx(with_pairs.value, rel=1e-9)
