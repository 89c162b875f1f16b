"""The LP's neighbourhood (solve/rins.py): which columns it fixes, when it runs, and that on a long
dialogue whose root LP is OPT it holds a store at the LP's bound, found from the incumbent the
search has when the race starts."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_fast import _core
from memaudit_fast.model.compiled import budget_limit, compile_package
from memaudit_fast.model.package import Package
from memaudit_fast.solve.backends import HighsStop, solve_highs
from memaudit_fast.solve.exact import _held_to_lp_bound, _Race, lp_bound_proves
from memaudit_fast.solve.milp import build_milp
from memaudit_fast.solve.rins import best_near, neighbourhood, on_lattice, search_lp_neighbourhood
from memaudit_fast.solve.root_lp import RootLp, root_lp
from strategies import packages


def test_a_value_is_on_the_lattice_only_within_a_millionth_of_a_step():
    assert on_lattice(1289.6000000016695, 0.05)  # an LP that was OPT, as HiGHS returned it
    assert on_lattice(1297.5, 0.05) and on_lattice(-3.0, 0.5)
    assert not on_lattice(1289.61, 0.05)
    assert not on_lattice(448.7425, 0.0125)  # 35,899.4 steps
    assert not on_lattice(10.0, 0.0)  # no lattice known: never
    assert not on_lattice(math.inf, 0.5) and not on_lattice(math.nan, 0.5)
    # A step too fine to tell (1e-5 on 4,303: 4.3e8 steps, where rounding alone is 0.4 step): always.
    assert on_lattice(4303.0948486398165, 1e-5) and on_lattice(4303.09, 1e-5)


@settings(max_examples=60, deadline=None)
@given(data=packages(max_candidates=9, max_units=4, extras=False), frac=st.sampled_from([0.3, 0.6, 1.0]),
       seed=st.integers(0, 2**16))
def test_the_neighbourhood_fixes_exactly_where_the_point_and_the_store_agree(data, frac, seed):
    compiled = compile_package(Package.from_dict(data))
    budget = round(frac * float(compiled.cost.sum()), 2)
    model = build_milp(compiled, budget, plain=True)
    rng = np.random.default_rng(seed)
    x = rng.choice([0.0, 1.0, 0.5], size=compiled.num_candidates)
    store = [int(u) for u in np.flatnonzero(rng.integers(0, 2, size=compiled.num_candidates))]
    other = [int(u) for u in np.flatnonzero(rng.integers(0, 2, size=compiled.num_candidates))]
    near = neighbourhood(model, x, [store, other])
    for j, u in enumerate(model.candidates):
        at = x[u]
        held = (u in store) + (u in other)
        expect_upper = 0.0 if (at == 0.0 and held == 0) else model.col_upper[j]
        expect_lower = min(1.0, expect_upper) if (at == 1.0 and held == 2) else model.col_lower[j]
        assert near.col_upper[j] == expect_upper and near.col_lower[j] == expect_lower
    # The y columns and the rows are the model's.
    assert np.array_equal(near.col_upper[model.num_x:], model.col_upper[model.num_x:])
    assert np.array_equal(near.row_upper, model.row_upper) and near.objective is model.objective


def test_off_the_lattice_or_on_a_wide_neighbourhood_it_does_not_run():
    compiled = compile_package(Package.from_dict(_dialogue(1000, seed=3)))
    budget = float(round(0.1 * float(compiled.cost.sum())))
    model = build_milp(compiled, budget, plain=True)
    granularity = float(_core.objective_granularity(compiled.problem))
    heard: list[tuple[int, ...]] = []
    off = RootLp(bound=487.3636, value=487.3636, x=np.zeros(compiled.num_candidates))
    assert search_lp_neighbourhood(model, off, [[]], granularity, stop=HighsStop(), on_store=heard.append) is None
    # On the lattice, but nothing is fixed where the point is fractional everywhere.
    wide = RootLp(bound=487.35, value=487.35, x=np.full(compiled.num_candidates, 0.5))
    assert search_lp_neighbourhood(model, wide, [[]], granularity, stop=HighsStop(), on_store=heard.append) is None
    # A narrow one runs, for stores at the lattice point under the bound only: every candidate
    # fixed to 0 but ten, which cannot reach 487.35 (HiGHS says so at once) but reach 0.
    x = np.zeros(compiled.num_candidates)
    x[model.candidates[:10]] = 0.5
    ten = {int(u) for u in model.candidates[:10]}
    high = search_lp_neighbourhood(model, RootLp(487.35, 487.35, x), [[]], granularity, stop=HighsStop(),
                                   on_store=heard.append)
    assert high is not None and high.status == "infeasible" and heard == []
    low = search_lp_neighbourhood(model, RootLp(0.0, 0.0, x), [[]], granularity, stop=HighsStop(), on_store=heard.append)
    assert low is not None and low.status == "optimal" and low.store is not None and set(low.store) <= ten
    assert heard and all(set(store) <= ten for store in heard)


def test_the_target_row_keeps_exactly_the_stores_worth_that_much():
    compiled = compile_package(Package.from_dict(_dialogue(1000, seed=3)))
    budget = float(round(0.1 * float(compiled.cost.sum())))
    model = build_milp(compiled, budget, plain=True)
    best = solve_highs(model, time_limit=60)
    assert best.status == "optimal" and best.objective is not None
    x = np.full(compiled.num_candidates, 0.5)
    at_opt = solve_highs(neighbourhood(model, x, [[]], at_least=best.objective - 1e-6), time_limit=60)
    assert at_opt.status == "optimal" and at_opt.objective == pytest.approx(best.objective, rel=1e-9)
    above = solve_highs(neighbourhood(model, x, [[]], at_least=best.objective + 0.01), time_limit=60)
    assert above.status == "infeasible" and above.store is None


def test_on_a_dialogue_whose_root_lp_is_opt_the_neighbourhood_holds_a_store_at_its_bound():
    # 3,001 candidates at 10% (seed 3): the root LP with the search's cuts is 1289.6 = OPT, which
    # the search's own heuristics reach after about 0.9 s.
    compiled = compile_package(Package.from_dict(_dialogue(3000, seed=3)))
    budget = float(round(0.1 * float(compiled.cost.sum())))
    granularity = float(_core.objective_granularity(compiled.problem))
    lp = root_lp(compiled, build_milp(compiled, budget), seconds=30.0)
    assert lp is not None and on_lattice(lp.value, granularity)
    # The root's store (1289.35), below the bound by five lattice steps.
    (early,) = _core.solve(compiled.problem, [budget], node_limit=1)
    assert not lp_bound_proves(early.value, lp.bound, granularity)
    incumbent = [int(u) for u in early.selected]
    race = _Race(HighsStop(), threading.Thread(), lp_bound=lp.bound)
    stop = _core.BudgetStop()
    outcome = search_lp_neighbourhood(build_milp(compiled, budget, plain=True), lp, [incumbent], granularity,
                                      stop=race.stop, on_store=_held_to_lp_bound(compiled, budget, race, stop),
                                      seconds=30.0)
    assert outcome is not None and race.lp_proof is not None
    store, value = race.lp_proof
    assert len({int(compiled.group_of[u]) for u in store}) == len(store)
    assert float(sum(float(compiled.cost[u]) for u in store)) <= budget_limit(budget)
    assert lp_bound_proves(value, lp.bound, granularity) and stop.budget == budget  # the search was told
    reference = solve_highs(build_milp(compiled, budget), time_limit=60)
    assert reference.status == "optimal" and value == pytest.approx(reference.objective, rel=1e-7)


def test_the_best_store_near_the_lp_counts_only_stores_worth_what_is_asked():
    compiled = compile_package(Package.from_dict(_dialogue(1000, seed=0)))
    budget = float(round(0.05 * float(compiled.cost.sum())))
    lp = root_lp(compiled, build_milp(compiled, budget), seconds=30.0)
    assert lp is not None
    model = build_milp(compiled, budget, plain=True)
    opt = solve_highs(model, time_limit=60)
    assert opt.status == "optimal" and opt.objective is not None
    (early,) = _core.solve(compiled.problem, [budget], node_limit=1)
    store = [int(u) for u in early.selected]
    heard: list[float] = []

    def worth(found: tuple[int, ...]) -> None:
        heard.append(float(compiled.objective(sorted(found))))

    # Nothing anywhere is worth more than OPT: none is heard, and none is returned.
    assert best_near(model, lp, store, stop=HighsStop(), on_store=worth, seconds=30.0, at_least=opt.objective + 0.01) is None
    assert heard == []
    # Asked for the store's own worth, what it hears is worth at least that.
    found = best_near(model, lp, store, stop=HighsStop(), on_store=worth, seconds=30.0, at_least=early.value)
    assert found is not None and heard and min(heard) >= early.value - 1e-6
    assert float(compiled.objective(sorted(found))) == pytest.approx(max(heard), rel=1e-9)


def _dialogue(n: int, seed: int) -> dict:
    from oracles.dialogue import dialogue_package

    return dialogue_package(n, seed=seed)


def test_the_search_publishes_its_best_store_for_the_racing_thread():
    compiled = compile_package(Package.from_dict(_dialogue(1000, seed=3)))
    budget = float(round(0.1 * float(compiled.cost.sum())))
    stop = _core.BudgetStop()
    assert stop.incumbent_of(budget) is None
    (result,) = _core.solve(compiled.problem, [budget], node_limit=50, budget_stop=stop)
    published = stop.incumbent_of(budget)
    assert published is not None and published[0] == pytest.approx(result.value, rel=1e-12)
    assert sorted(published[1]) == sorted(int(u) for u in result.selected)  # package indices
    assert float(compiled.objective(published[1])) == pytest.approx(published[0], rel=1e-12)
    assert stop.incumbent_of(budget + 1.0) is None


def test_the_race_gives_each_neighbourhood_time_that_grows_with_the_package():
    # As the root LP's stage: RINS_SECONDS up to 3,000 candidates, in proportion beyond (a
    # dialogue of 10,002 candidates needs 0.21 s for the store at its LP's bound), never more
    # than the solve has left.
    from memaudit_fast.solve.race import neighbourhood_seconds
    from memaudit_fast.solve.rins import RINS_SECONDS

    assert neighbourhood_seconds(1000, None) == neighbourhood_seconds(3000, None) == RINS_SECONDS
    assert neighbourhood_seconds(10_002, None) == pytest.approx(RINS_SECONDS * 10_002 / 3000)
    assert neighbourhood_seconds(10_002, 0.05) == 0.05
    assert neighbourhood_seconds(1000, 1.0) == RINS_SECONDS


def test_without_any_store_the_lps_own_neighbourhood_holds_a_store_at_its_bound(monkeypatch):
    # RENS comes first: only the LP's fractional candidates are free. On redundant 1,000 @ 5%
    # (seed 0) the root LP is OPT (91) and that neighbourhood holds a store worth it; before,
    # a search with no store of the search's searched nothing.
    from memaudit_fast.solve import rins as rins_module
    from oracles.exact import package_from_instance, synthetic_instance

    data = package_from_instance(synthetic_instance(1000, seed=0, kind="redundant"), "redundant-1000-0")
    compiled = compile_package(Package.from_dict(data))
    budget = float(max(4.0, round(0.05 * float(compiled.cost.sum()))))
    granularity = float(_core.objective_granularity(compiled.problem))
    lp = root_lp(compiled, build_milp(compiled, budget), seconds=30.0)
    assert lp is not None and on_lattice(lp.value, granularity)
    model = build_milp(compiled, budget, plain=True)
    models: list = []
    heard: list[tuple[int, ...]] = []

    def spy(near, **kwargs):
        models.append(near)
        return solve_highs(near, **kwargs)

    monkeypatch.setattr(rins_module, "solve_highs", spy)
    outcome = search_lp_neighbourhood(model, lp, [], granularity, stop=HighsStop(), on_store=heard.append,
                                      seconds=30.0)
    assert outcome is not None and len(models) == 1
    # Fixed exactly where the point is integral (0 or 1), free where it is fractional.
    assert np.array_equal(models[0].col_upper[: model.num_x], neighbourhood(model, lp.x, []).col_upper[: model.num_x])
    fractional = (lp.x[model.candidates] > 1e-6) & (lp.x[model.candidates] < 1 - 1e-6)
    free = models[0].col_upper[: model.num_x] > models[0].col_lower[: model.num_x]
    assert np.array_equal(free & (model.col_upper[: model.num_x] > 0), fractional & (model.col_upper[: model.num_x] > 0))
    assert heard
    best = max(float(compiled.objective(sorted(store))) for store in heard)
    assert lp_bound_proves(best, lp.bound, granularity)
    reference = solve_highs(build_milp(compiled, budget), time_limit=60)
    assert reference.status == "optimal" and best == pytest.approx(reference.objective, rel=1e-9)


def test_a_neighbourhoods_bound_is_never_read_as_the_milps():
    # The race reads its stop's mip_bound as HiGHS's bound on the whole MILP (race_watch._highs_ahead:
    # a race whose HiGHS is ahead of the search stays on the whole MILP). A neighbourhood's
    # HiGHS proves a bound over the neighbourhood only; on an entity timeline of 1,000 @ 5%
    # (seed 2) such a bound kept the race off the 16% of candidates the search's root left open.
    compiled = compile_package(Package.from_dict(_dialogue(1000, seed=0)))
    budget = float(round(0.05 * float(compiled.cost.sum())))
    granularity = float(_core.objective_granularity(compiled.problem))
    lp = root_lp(compiled, build_milp(compiled, budget), seconds=30.0)
    assert lp is not None
    model = build_milp(compiled, budget, plain=True)
    (early,) = _core.solve(compiled.problem, [budget], node_limit=1)
    store = [int(u) for u in early.selected]
    stop = HighsStop()
    found = best_near(model, lp, store, stop=stop, seconds=30.0, at_least=early.value)
    assert found is not None  # HiGHS ran a MIP there and proved a bound over the neighbourhood
    search_lp_neighbourhood(model, lp, [store], granularity, stop=stop, on_store=lambda s: None, seconds=30.0)
    assert stop.mip_bound == math.inf
    # The same HiGHS on the same neighbourhood with that stop itself would have set it.
    solve_highs(neighbourhood(model, lp.x, [store]), time_limit=30.0, stop=stop)
    assert math.isfinite(stop.mip_bound)
    # A stop set before still stops a neighbourhood: it finds nothing.
    stopped = HighsStop()
    stopped.set()
    assert best_near(model, lp, store, stop=stopped, seconds=30.0) is None
