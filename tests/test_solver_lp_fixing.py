"""Fixing by the root LP's reduced costs (solve/lp_fixing.py) and its place in the race.

OPT is always the value in hand or the optimum over the open candidates (brute force over
small random packages, for every value a store takes), the race keeps the store it fixed
to and reports the larger optimum, and on an entity profile, where fixing pays, a raced solve
hands HiGHS a fraction of the candidates and still ends at OPT."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_fast import _core
from memaudit_fast.model.compiled import compile_package
from memaudit_fast.model.package import Package
from memaudit_fast.solve.backends import HighsStop, MilpOutcome
from memaudit_fast.solve.exact import lp_bound_proves, solve
from memaudit_fast.solve.handoff import HandoffOutcome
from memaudit_fast.solve.lp_fixing import (
    best_unproven,
    few_open,
    open_candidates,
    root_duals,
    worth_to_close,
)
from memaudit_fast.solve.milp import build_milp
from memaudit_fast.solve.root_lp import root_lp
from oracles.exact import all_stores
from oracles.search_stub import SearchStub
from strategies import packages


def proves_for(compiled):
    granularity = float(_core.objective_granularity(compiled.problem))
    return lambda value, bound: lp_bound_proves(value, bound, granularity)


def lp_and_duals(data: dict, frac: float):
    """A random package's compiled form, budget, root LP and its duals; None where the LP has no
    rows to fix by (nothing to check)."""
    compiled = compile_package(Package.from_dict(data))
    budget = round(frac * float(compiled.cost.sum()), 2)
    lp = root_lp(compiled, build_milp(compiled, budget))
    if lp is None or lp.rows is None:
        return None
    pi = root_duals(lp, 5.0)
    assert pi is not None
    return compiled, budget, lp, pi


@settings(max_examples=150, deadline=None)
@given(data=packages(max_candidates=9, max_units=4, extras=False), frac=st.sampled_from([0.2, 0.4, 0.7, 1.0]))
def test_opt_is_the_value_in_hand_or_the_optimum_over_the_open_candidates(data, frac):
    made = lp_and_duals(data, frac)
    if made is None:
        return
    compiled, budget, lp, pi = made
    stores = all_stores(compiled, budget)
    opt = max(worth for _, worth in stores)
    for value in sorted({worth for _, worth in stores}):
        kept = set(open_candidates(lp, pi, value, proves_for(compiled)).tolist())
        # OPT is the value in hand or the optimum over the open candidates (the others are
        # out of every better store, or dropped by the exact reductions, which keep an OPT store).
        over_open = max(worth for store, worth in stores if set(store) <= kept)
        assert max(value, over_open) >= opt - 1e-9 * max(1.0, abs(opt)), (value, sorted(kept), opt)


@pytest.fixture(scope="module")
def profile():
    from oracles.packages import compiled_at_fraction
    from oracles.profile import profile_package

    return compiled_at_fraction(profile_package(1000, seed=0), 0.05)


def test_a_store_near_opt_leaves_few_open_and_a_poor_one_leaves_too_many(profile):
    compiled, budget = profile
    exact = solve(compiled, budget=budget, time_limit=60)
    assert exact.proven_optimal
    lp = root_lp(compiled, build_milp(compiled, budget), seconds=5.0)
    assert lp is not None
    pi = root_duals(lp, 5.0)
    assert pi is not None
    near = few_open(lp, pi, exact.value, proves_for(compiled), num_candidates=compiled.num_candidates)
    assert near is not None and 0 < len(near) <= 0.4 * compiled.num_candidates
    assert few_open(lp, pi, 0.5 * exact.value, proves_for(compiled), num_candidates=compiled.num_candidates) is None
    # Off a lattice the best store short of a proof is worth a hair under the bound, and closes more.
    granularity = float(_core.objective_granularity(compiled.problem))
    best_case = best_unproven(lp.bound, granularity)
    assert exact.value <= best_case < lp.bound
    assert len(open_candidates(lp, pi, best_case, proves_for(compiled))) <= len(near)


@settings(max_examples=100, deadline=None)
@given(data=packages(max_candidates=9, max_units=4, extras=False), frac=st.sampled_from([0.2, 0.4, 0.7, 1.0]),
       share=st.sampled_from([0.0, 0.2, 0.4, 0.6]))
def test_the_worth_to_close_is_the_least_that_leaves_few_open(data, frac, share):
    made = lp_and_duals(data, frac)
    if made is None:
        return
    compiled, _, lp, pi = made
    granularity = float(_core.objective_granularity(compiled.problem))
    n = compiled.num_candidates
    needed = worth_to_close(lp, pi, granularity, num_candidates=n, share=share)

    def open_at(value: float) -> int:
        return len(open_candidates(lp, pi, value, proves_for(compiled)))

    if needed == -float("inf"):
        assert open_at(-1e18) <= share * n
        return
    assert open_at(needed) <= share * n
    # A store worth a little less (a lattice step less, on a lattice) leaves too many open.
    less = needed - max(granularity, 1e-6 * max(1.0, abs(needed)))
    assert open_at(less) > share * n


def test_the_worth_to_close_on_a_profile_lies_between_a_poor_store_and_opt(profile):
    compiled, budget = profile
    exact = solve(compiled, budget=budget, time_limit=60)
    lp = root_lp(compiled, build_milp(compiled, budget), seconds=5.0)
    pi = root_duals(lp, 5.0)
    granularity = float(_core.objective_granularity(compiled.problem))
    needed = worth_to_close(lp, pi, granularity, num_candidates=compiled.num_candidates)
    # OPT leaves few open here (above), a store worth half of it does not.
    assert 0.5 * exact.value < needed <= exact.value
    assert few_open(lp, pi, needed, proves_for(compiled), num_candidates=compiled.num_candidates) is not None


def test_the_best_store_short_of_a_proof_is_a_lattice_step_under_the_bound():
    assert best_unproven(1308.8, 0.05) == pytest.approx(1308.75)  # a store worth 1308.8 meets it
    assert best_unproven(1308.79, 0.05) == pytest.approx(1308.70)
    assert best_unproven(464.657, 0.0) == pytest.approx(464.657, abs=1e-6) and best_unproven(464.657, 0.0) < 464.657
    # Whatever it is, a store worth it is not proven by the bound, and one a step above is.
    for bound, step in ((1308.8, 0.05), (982.9375, 0.5), (17.0, 1.0)):
        assert not lp_bound_proves(best_unproven(bound, step), bound, step)
        assert lp_bound_proves(best_unproven(bound, step) + step, bound, step)


def test_the_race_hands_highs_the_open_candidates_and_ends_at_opt(profile, monkeypatch):
    from memaudit_fast.solve import handoff

    compiled, budget = profile
    reference = solve(compiled, budget=budget, finish=None, time_limit=120)  # the branch-and-bound alone
    assert reference.proven_optimal
    sizes: list[int] = []
    finish = handoff.finish_with_highs

    def spy(compiled_, budget_, candidates, *args, **kwargs):
        sizes.append(len(candidates))
        return finish(compiled_, budget_, candidates, *args, **kwargs)

    monkeypatch.setattr(handoff, "finish_with_highs", spy)
    result = solve(compiled, budget=budget, time_limit=60)
    assert result.proven_optimal and result.value == pytest.approx(reference.value, abs=1e-9)
    assert sizes and min(sizes) <= 0.4 * compiled.num_candidates


def test_the_held_store_stands_in_for_a_worse_one_of_highs(profile):
    from memaudit_fast.solve.race import _with_held

    compiled, _ = profile
    milp = MilpOutcome("highs", "x", "optimal", 0.0, 0.0, (), 0, 0.0)
    held = (tuple(range(3)), float(compiled.objective([0, 1, 2])))
    # HiGHS proved its optimum over the open candidates (the empty store, 0): the held store is
    # better, and the bound over the open ones is raised to its worth.
    out = _with_held(compiled, HandoffOutcome(True, (), 0.0, milp), *held)
    assert out.proven and out.store == held[0] and out.upper_bound == held[1]
    # A better store of HiGHS's stays.
    better = HandoffOutcome(True, tuple(range(6)), 1e9, milp)
    assert float(compiled.objective(list(range(6)))) >= held[1]
    kept = _with_held(compiled, better, *held)
    assert kept.store == better.store and kept.upper_bound == 1e9


def test_fixing_keeps_the_searchs_store_and_leaves_the_search_running(profile):
    from memaudit_fast.solve.race import _fix_by_lp, _Race

    compiled, budget = profile
    exact = solve(compiled, budget=budget, time_limit=60)
    ids = {cid: i for i, cid in enumerate(compiled.candidate_ids)}
    search = SearchStub(exact.value, sorted(ids[c] for c in exact.selected))
    lp = root_lp(compiled, build_milp(compiled, budget), seconds=5.0)
    race = _Race(HighsStop(), threading.Thread(), model=build_milp(compiled, budget, plain=True))
    kept = _fix_by_lp(compiled, budget, race, lp, search, None, None)
    assert kept is not None and 0 < len(kept) <= 0.4 * compiled.num_candidates
    assert race.held is not None and race.held[1] == pytest.approx(exact.value, abs=1e-9)
    assert race.lp_proof is None and not race.stop.is_set() and not search.stopped


def test_a_store_that_leaves_nothing_open_is_proven_and_stops_both_engines():
    from memaudit_fast.solve.race import _fix_by_lp, _Race
    from oracles.packages import small_package

    compiled = compile_package(small_package())  # at B = 3 the LP is integral: {a, c}, worth 3
    ids = {cid: i for i, cid in enumerate(compiled.candidate_ids)}
    search = SearchStub(3.0, [ids["a"], ids["c"]])
    lp = root_lp(compiled, build_milp(compiled, 3.0), seconds=5.0)
    race = _Race(HighsStop(), threading.Thread(), model=build_milp(compiled, 3.0, plain=True))
    assert _fix_by_lp(compiled, 3.0, race, lp, search, None, None) == []
    assert race.lp_proof == ((ids["a"], ids["c"]), 3.0)
    assert race.stop.is_set() and search.stopped == [3.0]
    # A poorer store in hand ({c}, worth 1) leaves candidates open, and proves nothing.
    race = _Race(HighsStop(), threading.Thread(), model=build_milp(compiled, 3.0, plain=True))
    search = SearchStub(1.0, [ids["c"]])
    lp = root_lp(compiled, build_milp(compiled, 3.0), seconds=5.0)
    kept = _fix_by_lp(compiled, 3.0, race, lp, search, None, None)
    # The LP's neighbourhood of {c} may hold OPT; only a store worth OPT closes every candidate.
    held = race.held[1] if race.held is not None else 1.0
    assert (kept == []) == (held == 3.0) == (race.lp_proof is not None)


@pytest.mark.parametrize("margin", [-0.01, 0.01])
def test_the_neighbourhood_search_asks_for_enough_worth_and_ends_once_few_are_open(profile, monkeypatch, margin):
    from memaudit_fast.solve import race as race_module
    from memaudit_fast.solve import rins

    compiled, budget = profile
    exact = solve(compiled, budget=budget, time_limit=60)
    ids = {cid: i for i, cid in enumerate(compiled.candidate_ids)}
    opt_store = tuple(sorted(ids[c] for c in exact.selected))
    (early,) = _core.solve(compiled.problem, [budget], node_limit=1)
    lp = root_lp(compiled, build_milp(compiled, budget), seconds=5.0)
    pi = root_duals(lp, 5.0)
    granularity = float(_core.objective_granularity(compiled.problem))
    needed = worth_to_close(lp, pi, granularity, num_candidates=compiled.num_candidates)
    assert early.value < needed  # the root's store leaves too many open: a better one is looked for
    share_at_opt = len(open_candidates(lp, pi, exact.value, proves_for(compiled))) / compiled.num_candidates
    # The search ends once its store leaves at most FIX_ENOUGH_SHARE open: OPT's store ends it
    # only when that share is at least OPT's.
    monkeypatch.setattr(race_module, "FIX_ENOUGH_SHARE", share_at_opt + margin)
    asked: dict = {}

    def stand_in(model, lp_, store, *, stop, on_store=None, seconds=0.1, at_least=None):
        asked["at_least"], asked["seconds"] = at_least, seconds
        on_store(opt_store)
        asked["ended"] = stop.is_set()
        return opt_store

    monkeypatch.setattr(rins, "best_near", stand_in)
    search = SearchStub(early.value, [int(u) for u in early.selected])
    race = race_module._Race(HighsStop(), threading.Thread(), model=build_milp(compiled, budget, plain=True))
    kept = race_module._fix_by_lp(compiled, budget, race, lp, search, None, None)
    assert asked["at_least"] == pytest.approx(needed, abs=1e-9)
    # Its own time, shorter than the neighbourhood search for a store at the LP's bound.
    from memaudit_fast.solve.root_lp import size_factor

    assert asked["seconds"] == pytest.approx(race_module.FIX_NEAR_SECONDS * size_factor(compiled.num_candidates))
    assert asked["seconds"] < race_module.neighbourhood_seconds(compiled.num_candidates, None)
    assert asked["ended"] == (margin > 0)
    assert race.held is not None and race.held[1] == pytest.approx(exact.value, abs=1e-9)
    assert kept is not None and len(kept) == round(share_at_opt * compiled.num_candidates)


def test_a_settled_root_leaves_the_floor_to_highs_without_a_neighbourhood_search(monkeypatch):
    # Dialogue 3,004 @ 10% (seed 10): the families leave its LP at OPT (1293.4, on the lattice),
    # where fixing would leave most candidates open. The neighbourhood search for a floor near
    # the search's store runs where the root is not settled, and not where it is (see
    # race._fix_by_lp): HiGHS then takes the whole MILP at once.
    from dataclasses import replace

    from memaudit_fast.solve import race as race_module
    from oracles.dialogue import dialogue_package
    from oracles.packages import compiled_at_fraction

    compiled, budget = compiled_at_fraction(dialogue_package(3000, seed=10), 0.1)
    lp = root_lp(compiled, build_milp(compiled, budget), seconds=5.0)
    assert lp is not None and lp.settled
    (early,) = _core.solve(compiled.problem, [budget], node_limit=1)
    searched: list[bool] = []
    monkeypatch.setattr(race_module, "_better_near", lambda *args: searched.append(args[3].settled))
    for settled in (True, False):
        race = race_module._Race(HighsStop(), threading.Thread(), model=build_milp(compiled, budget, plain=True))
        search = SearchStub(early.value, [int(u) for u in early.selected])
        assert race_module._fix_by_lp(compiled, budget, race, replace(lp, settled=settled), search, None, None) is None
        assert race.held is None and race.lp_proof is None and not search.stopped
    assert searched == [False]
