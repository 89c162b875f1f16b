"""HiGHS in the race stops a lattice step short of its store (solve/handoff.py, lattice_gap):
where every store's worth is a multiple of the objective's granularity, a bound less than a
step above a store proves it optimal. Checked against brute force and plain HiGHS."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memaudit_fast import _core
from memaudit_fast.model.compiled import compile_package
from memaudit_fast.model.package import Package
from memaudit_fast.solve.backends import _abs_gap, solve_highs
from memaudit_fast.solve.handoff import finish_with_highs, lattice_gap
from memaudit_fast.solve.milp import build_milp
from memaudit_fast.suites.small import generate_package
from oracles.exact import all_stores
from strategies import packages

TOL = 1e-9


def test_the_gap_is_a_step_less_hairs_breadth_and_none_off_a_lattice() -> None:
    compiled = compile_package(Package.from_dict(generate_package("base", seed=0, scale=1)))
    model = build_milp(compiled, 8.0)
    tiny = _abs_gap(model)
    assert lattice_gap(model, 0.0125) == pytest.approx(0.0125 - tiny, abs=0.0)
    assert lattice_gap(model, 0.0) is None  # no lattice known
    assert lattice_gap(model, math.inf) is None
    assert lattice_gap(model, 100 * tiny) is None  # too fine to tell from HiGHS's own gap


@settings(max_examples=120, deadline=None)
@given(data=packages(max_candidates=9, max_units=4, extras=False), frac=st.sampled_from([0.2, 0.4, 0.7]))
def test_a_proof_a_step_short_is_opt_with_its_store_as_bound(data: dict, frac: float) -> None:
    compiled = compile_package(Package.from_dict(data))
    budget = round(frac * float(compiled.cost.sum()), 2)
    granularity = float(_core.objective_granularity(compiled.problem))
    out = finish_with_highs(compiled, budget, range(compiled.num_candidates), None, granularity=granularity)
    if out is None:  # a saturation without an exact MILP
        return
    opt = max(worth for _, worth in all_stores(compiled, budget))
    assert out.proven
    store = sorted(out.store or ())
    worth = float(compiled.objective(store)) if store else 0.0
    assert worth == pytest.approx(opt, rel=TOL, abs=TOL)
    # The bound stated is the store's worth (no lattice point between them), never under OPT.
    assert out.upper_bound is not None and out.upper_bound >= opt - 1e-6 * max(1.0, opt)
    assert out.upper_bound <= worth + 1e-6 * max(1.0, worth)


def test_on_memaudit_small_the_lattice_stop_agrees_with_plain_highs() -> None:
    data = generate_package("base", seed=3, scale=10)
    compiled = compile_package(Package.from_dict(data))
    granularity = float(_core.objective_granularity(compiled.problem))
    for frac in (0.05, 0.2):
        budget = round(frac * float(compiled.cost.sum()))
        model = build_milp(compiled, budget, plain=True)
        assert lattice_gap(model, granularity) is not None
        plain = solve_highs(model, threads=1)
        out = finish_with_highs(compiled, budget, range(compiled.num_candidates), None, model=model,
                                granularity=granularity)
        assert out is not None and out.proven and plain.status == "optimal" and plain.objective is not None
        assert float(compiled.objective(sorted(out.store or ()))) == pytest.approx(plain.objective, rel=1e-9)


def test_highs_is_stopped_once_its_bound_is_within_the_distance_given() -> None:
    # Any distance at all is taken on trust: with a huge one HiGHS stops at its first store,
    # which the outcome then states as proven, with that store's worth as the bound.
    compiled = compile_package(Package.from_dict(generate_package("base", seed=1, scale=10)))
    budget = round(0.1 * float(compiled.cost.sum()))
    model = build_milp(compiled, budget, plain=True)
    plain = solve_highs(model, threads=1)
    early = solve_highs(model, threads=1, short_of=1e9)
    assert early.status == "optimal" and early.objective is not None and early.bound == early.objective
    assert plain.objective is not None and early.objective <= plain.objective + 1e-9 * max(1.0, plain.objective)
    # It stopped before HiGHS's own end: at a worse store (here 196.8 against 198.575), or
    # before the root node was done.
    assert early.objective < plain.objective - 1e-9 or early.nodes < plain.nodes
    # Off any lattice nothing changes.
    again = solve_highs(model, threads=1, short_of=None)
    assert again.status == "optimal" and again.objective == pytest.approx(plain.objective, rel=1e-9)


@settings(max_examples=80, deadline=None)
@given(data=packages(max_candidates=9, max_units=4, extras=False), frac=st.sampled_from([0.2, 0.4, 0.7]),
       short=st.sampled_from([0, 1, 3]))
def test_a_store_known_elsewhere_is_proven_only_when_it_is_opt(data: dict, frac: float, short: int) -> None:
    # The floor is the worth of a store held outside HiGHS: OPT itself, or a store a few lattice
    # steps (or a hair) under it. HiGHS may stop at it only when it is OPT; whatever it states
    # as proven is OPT and its bound never under OPT.
    compiled = compile_package(Package.from_dict(data))
    budget = round(frac * float(compiled.cost.sum()))
    granularity = float(_core.objective_granularity(compiled.problem))
    worths = sorted({round(worth, 9) for _, worth in all_stores(compiled, budget)})
    opt = worths[-1]
    held = worths[max(0, len(worths) - 1 - short)]
    out = finish_with_highs(compiled, budget, range(compiled.num_candidates), None, granularity=granularity,
                            floor=lambda: held)
    if out is None:
        return
    assert out.proven and out.upper_bound is not None
    assert out.upper_bound >= opt - 1e-6 * max(1.0, opt)
    stated = max(held, float(compiled.objective(sorted(out.store))) if out.store else -math.inf)
    assert stated == pytest.approx(opt, rel=TOL, abs=TOL)
    if held < opt - 1e-6 * max(1.0, opt):  # a store under OPT is never the one proven
        assert out.store is not None and float(compiled.objective(sorted(out.store))) == pytest.approx(opt, rel=TOL, abs=TOL)


def test_highs_stops_at_a_bound_near_a_store_known_elsewhere_before_it_finds_one() -> None:
    compiled = compile_package(Package.from_dict(generate_package("base", seed=1, scale=10)))
    budget = round(0.1 * float(compiled.cost.sum()))
    model = build_milp(compiled, budget, plain=True)
    plain = solve_highs(model, threads=1)
    assert plain.status == "optimal" and plain.objective is not None
    opt = plain.objective
    gap = lattice_gap(model, float(_core.objective_granularity(compiled.problem)))
    early = solve_highs(model, threads=1, short_of=gap, floor=lambda: opt)
    assert early.status == "optimal" and early.bound == pytest.approx(opt, rel=1e-12)
    assert early.nodes <= plain.nodes


def test_the_race_knows_the_searchs_store_and_the_held_one() -> None:
    import threading

    from memaudit_fast.solve.backends import HighsStop
    from memaudit_fast.solve.race import _best_known, _Race
    from oracles.search_stub import SearchStub

    compiled = compile_package(Package.from_dict(generate_package("base", seed=1, scale=1)))
    budget = 8.0
    store = [u for u in range(compiled.num_candidates) if float(compiled.cost[u]) <= 8.0][:1]
    worth = float(compiled.objective(store))
    search = SearchStub(123.0, store)  # the value it reports is not taken on trust
    race = _Race(HighsStop(), threading.Thread())
    known = _best_known(compiled, budget, race, search)
    assert known() == worth
    race.held = ((), worth + 1.0)
    assert known() == worth + 1.0
    # A store that is not one (two of a group, or over the budget) counts for nothing.
    group = int(compiled.group_of[0])
    twins = [u for u in range(compiled.num_candidates) if int(compiled.group_of[u]) == group][:2]
    race.held = None
    search.incumbent = (7.0, twins * (1 if len(twins) == 2 else 2))
    assert known() == -math.inf


def test_the_race_looks_near_the_searchs_store_for_a_better_one_as_highs_floor() -> None:
    # Before HiGHS takes the whole MILP, the LP's neighbourhood of the search's store is searched
    # for a better store (race._better_near): what it keeps is feasible, worth what it says and
    # more than the search's, and the floor (_best_known) counts it. From OPT's store nothing is
    # kept: no store is better.
    import threading

    from memaudit_fast.solve.backends import HighsStop
    from memaudit_fast.solve.exact import solve
    from memaudit_fast.solve.race import _best_known, _better_near, _infeasible, _Race
    from memaudit_fast.solve.root_lp import root_lp
    from oracles.search_stub import SearchStub

    compiled = compile_package(Package.from_dict(generate_package("base", seed=6, scale=25)))
    budget = float(round(0.2 * float(compiled.cost.sum())))
    lp = root_lp(compiled, build_milp(compiled, budget), seconds=30.0)
    assert lp is not None
    (early,) = _core.solve(compiled.problem, [budget], node_limit=1)
    store = tuple(sorted(int(u) for u in early.selected))
    heard: list[tuple[int, ...]] = []
    race = _Race(HighsStop(), threading.Thread(), model=build_milp(compiled, budget, plain=True))
    _better_near(compiled, budget, race, lp, (store, float(early.value)), heard.append, 30.0)
    assert race.found is not None and heard
    found, worth = race.found
    assert not _infeasible(compiled, found, budget)
    assert worth == float(compiled.objective(list(found))) > early.value
    assert _best_known(compiled, budget, race, SearchStub(early.value, list(store)))() == worth
    exact = solve(compiled, budget=budget, time_limit=60)
    assert exact.proven_optimal and worth <= exact.value + 1e-9
    ids = {cid: i for i, cid in enumerate(compiled.candidate_ids)}
    best = tuple(sorted(ids[c] for c in exact.selected))
    race = _Race(HighsStop(), threading.Thread(), model=build_milp(compiled, budget, plain=True))
    _better_near(compiled, budget, race, lp, (best, exact.value), None, 30.0)
    assert race.found is None


def test_a_store_found_beside_highs_is_the_outcomes_when_it_is_better() -> None:
    # The race's outcome takes the neighbourhood's store where HiGHS's is worse (a floor proof
    # ends HiGHS without its own store at OPT); HiGHS's bound, global on the whole MILP, stays.
    from memaudit_fast.solve.backends import MilpOutcome
    from memaudit_fast.solve.handoff import HandoffOutcome
    from memaudit_fast.solve.race import _with_held

    compiled = compile_package(Package.from_dict(generate_package("base", seed=1, scale=1)))
    milp = MilpOutcome("highs", "x", "optimal", 0.0, 0.0, (), 0, 0.0)
    worth = float(compiled.objective([0]))
    out = _with_held(compiled, HandoffOutcome(True, (), worth + 1.0, milp), (0,), worth)
    assert out.store == (0,) and out.upper_bound == worth + 1.0


def _with_linear_units(data: dict, every: int) -> dict:
    for i, unit in enumerate(data["units"]):
        if i % every == 0:
            unit["saturation"] = "linear"
    return data


def test_the_plain_models_gap_is_finite_where_a_linear_h_leaves_y_unbounded() -> None:
    # Spelt plainly, y of a linear unit has no upper bound of its own; HiGHS's absolute gap
    # was then infinite and it called its first store (or the floor) optimal.
    data = _with_linear_units(generate_package("base", seed=2, scale=3), every=4)
    compiled = compile_package(Package.from_dict(data))
    budget = round(0.1 * float(compiled.cost.sum()))
    plain, tight = build_milp(compiled, budget, plain=True), build_milp(compiled, budget)
    assert not math.isfinite(float(plain.col_upper.max()))
    implied = plain.implied_upper()
    assert math.isfinite(float(implied.max()))
    assert (implied[plain.num_x:] >= tight.col_upper[tight.num_x:] - 1e-9).all()  # never under the reach
    assert _abs_gap(tight) <= _abs_gap(plain) <= 10 * _abs_gap(tight)  # the same order: a tiny gap
    opt = solve_highs(tight, threads=1)
    out = solve_highs(plain, threads=1)
    assert out.status == opt.status == "optimal" and out.objective is not None and opt.objective is not None
    assert float(compiled.objective(sorted(out.store or ()))) == pytest.approx(opt.objective, rel=1e-9)


@settings(max_examples=80, deadline=None)
@given(data=packages(max_candidates=9, max_units=4, extras=False), frac=st.sampled_from([0.2, 0.4, 0.7]),
       every=st.sampled_from([1, 2, 3]))
def test_the_race_model_with_linear_units_proves_only_opt(data: dict, frac: float, every: int) -> None:
    # The race hands HiGHS the plain model and the worth of a store known elsewhere (here the
    # empty store's, 0): HiGHS may stop at that floor only when it is OPT.
    compiled = compile_package(Package.from_dict(_with_linear_units(data, every)))
    budget = round(frac * float(compiled.cost.sum()))
    opt = max(worth for _, worth in all_stores(compiled, budget))
    model = build_milp(compiled, budget, plain=True)
    assert math.isfinite(_abs_gap(model))
    granularity = float(_core.objective_granularity(compiled.problem))
    out = finish_with_highs(compiled, budget, range(compiled.num_candidates), None, model=model,
                            granularity=granularity, floor=lambda: 0.0)
    if out is None:  # log1p somewhere: no exact MILP
        return
    assert out.proven and out.upper_bound is not None and out.upper_bound >= opt - 1e-6 * max(1.0, opt)
    worth = float(compiled.objective(sorted(out.store))) if out.store else 0.0
    assert max(worth, 0.0) == pytest.approx(opt, rel=TOL, abs=1e-7)


# The floor's store (c2, worth 0.25) is of a candidate the reduction drops (c0 dominates it),
# off the reduced problem's lattice (steps of 1): the bound stated must still be at least 0.25.
_OFF_LATTICE_FLOOR = {
    "format": "memaudit.package/1", "package_id": "hyp/0", "objective": {"saturation": "cap1"}, "budgets": [0],
    "experiences": [{"experience_id": "e0", "timestamp": 0, "text": "turn 0"}],
    "units": [{"unit_id": "u0", "kind": "current_truth"}, {"unit_id": "u1", "kind": "current_truth"}],
    "candidates": [
        {"candidate_id": "c0", "experience_id": "e0", "representation": "raw_span", "cost": 0, "coverage": {"u0": 1.0}},
        {"candidate_id": "c1", "experience_id": "e0", "representation": "raw_span", "cost": 0, "coverage": {}},
        {"candidate_id": "c2", "experience_id": "e0", "representation": "raw_span", "cost": 0,
         "coverage": {"u0": 0.25}},
    ],
    "queries": [{"query_id": "q0", "text": "?", "required_unit_ids": ["u0"]}],
}


@settings(max_examples=80, deadline=None)
@given(data=packages(max_candidates=9, max_units=4, extras=False), frac=st.sampled_from([0.2, 0.4, 0.7]),
       short=st.sampled_from([0, 1, 3]), closed=st.sets(st.integers(0, 8), max_size=4))
@example(data=_OFF_LATTICE_FLOOR, frac=0.2, short=1, closed={0})
def test_a_cutoff_at_a_store_known_elsewhere_proves_opt_over_the_candidates_left(
        data: dict, frac: float, short: int, closed: set[int]) -> None:
    # As fixing leaves it: HiGHS on some candidates only, the floor a store of any (OPT's, or a
    # few steps under). With the cutoff HiGHS prunes every node that cannot beat the floor by
    # a step; what it states is the better of the floor and the optimum over the candidates
    # left, its bound never under that.
    compiled = compile_package(Package.from_dict(data))
    budget = round(frac * float(compiled.cost.sum()))
    granularity = float(_core.objective_granularity(compiled.problem))
    stores = list(all_stores(compiled, budget))
    worths = sorted({round(worth, 9) for _, worth in stores})
    held = worths[max(0, len(worths) - 1 - short)]
    left = [u for u in range(compiled.num_candidates) if u not in closed]
    best_left = max(worth for store, worth in stores if set(store) <= set(left))
    out = finish_with_highs(compiled, budget, left, None, granularity=granularity, floor=lambda: held, cutoff=True)
    if out is None:
        return
    truth = max(held, best_left)
    assert out.proven and out.upper_bound is not None
    assert out.upper_bound >= truth - 1e-6 * max(1.0, truth)
    found = float(compiled.objective(sorted(out.store))) if out.store else -math.inf
    assert out.store is None or set(out.store) <= set(left)
    assert max(held, found) == pytest.approx(truth, rel=TOL, abs=TOL)
    if best_left > held + 1e-6 * max(1.0, held):  # a better store than the floor's is HiGHS's to find
        assert found == pytest.approx(best_left, rel=TOL, abs=TOL)


def test_the_cutoff_prunes_from_the_start_and_never_hides_a_better_store() -> None:
    from oracles.timeline import timeline_package

    compiled = compile_package(timeline_package(300, seed=0, tie=False))  # HiGHS alone: about 200 nodes
    budget = round(0.1 * float(compiled.cost.sum()))
    model = build_milp(compiled, budget, plain=True)
    granularity = float(_core.objective_granularity(compiled.problem))
    gap = lattice_gap(model, granularity)
    plain = solve_highs(model, threads=1)
    assert plain.status == "optimal" and plain.objective is not None and gap is not None and plain.nodes > 1
    opt = plain.objective
    # A floor at OPT: every node is pruned at the root (HiGHS takes the limit in its own,
    # minimising, sense; the other sign would leave its path unchanged).
    pruned = solve_highs(model, threads=1, short_of=gap, floor=lambda: opt, cutoff=granularity / 2)
    assert pruned.status == "optimal" and pruned.bound == pytest.approx(opt, rel=1e-12)
    assert pruned.objective is None or pruned.objective <= opt + 1e-9 * opt
    assert pruned.nodes <= 1 < plain.nodes
    # A floor a step under OPT: HiGHS still finds OPT's worth and proves it.
    under = solve_highs(model, threads=1, short_of=gap, floor=lambda: opt - granularity, cutoff=granularity / 2)
    assert under.status == "optimal" and under.objective == pytest.approx(opt, rel=1e-9)
    assert under.bound == pytest.approx(opt, rel=1e-9)


def test_a_store_off_the_reduced_problems_lattice_is_never_the_one_proven() -> None:
    # The lattice is the reduced problem's: c4 (worth 1.0) is dominated by c5 (1.5) in their
    # group and dropped, so the step is 1.5 and 1.0 lies off it. A floor of 1.0 must not be
    # proven by a bound less than a step above it, with the cutoff or without.
    candidates = [{"candidate_id": f"c{i}", "experience_id": "e0", "representation": "raw_span", "cost": 0,
                   "coverage": {}} for i in range(8)]
    candidates[4]["coverage"] = {"u0": 0.0, "u1": 1.0}
    candidates[5]["coverage"] = {"u1": 1.5}
    data = {"format": "memaudit.package/1", "package_id": "off-lattice", "objective": {"saturation": "linear"},
            "budgets": [0], "experiences": [{"experience_id": "e0", "timestamp": 0, "text": "turn 0"}],
            "units": [{"unit_id": "u0", "kind": "current_truth"}, {"unit_id": "u1", "kind": "current_truth"}],
            "candidates": candidates, "queries": [{"query_id": "q0", "text": "?", "required_unit_ids": ["u1"]}]}
    compiled = compile_package(Package.from_dict(data))
    granularity = float(_core.objective_granularity(compiled.problem))
    assert granularity == pytest.approx(1.5)
    assert float(compiled.objective([4])) == pytest.approx(1.0)
    for cutoff in (False, True):
        out = finish_with_highs(compiled, 0.0, range(compiled.num_candidates), None, granularity=granularity,
                                floor=lambda: 1.0, cutoff=cutoff)
        assert out is not None and out.proven and out.store is not None
        assert float(compiled.objective(sorted(out.store))) == pytest.approx(1.5)
        assert out.upper_bound == pytest.approx(1.5)
