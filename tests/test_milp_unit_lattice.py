"""The race's MILP with each y counted in steps of its unit's lattice (milp.on_unit_lattice):
the same optimum and LP relaxation as the plain model, integer y only where that is exact."""

from __future__ import annotations

import math

import highspy
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_fast.model.compiled import compile_package
from memaudit_fast.model.package import Package
from memaudit_fast.solve.backends import solve_highs
from memaudit_fast.solve.exact import solve
from memaudit_fast.solve.milp import build_milp, highs_of, on_unit_lattice
from oracles.exact import all_stores
from strategies import packages, with_amounts

# Amounts on lattices of several steps (0.1, 0.25, 1/3), and two on none (pi / 10, 1e-9 off 0.3).
AMOUNTS = [0.1, 0.25, 0.3, 0.5, 0.6, 1.0, 1.5, 2.0, 1.0 / 3.0, 2.0 / 3.0, math.pi / 10, 0.3 + 1e-9]


def _lp_value(model) -> float:
    h = highs_of(model)
    h.setOptionValue("threads", 1)
    cols = np.arange(model.num_cols, dtype=np.int32)
    h.changeColsIntegrality(cols.size, cols, np.full(cols.size, highspy.HighsVarType.kContinuous))
    h.run()
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return float(h.getInfo().objective_function_value)


def test_a_cap1_unit_of_amounts_half_and_six_tenths_counts_tenths() -> None:
    data = {
        "format": "memaudit.package/1", "package_id": "lattice/1", "objective": {"saturation": "cap1"},
        "budgets": [3],
        "experiences": [{"experience_id": f"e{g}", "timestamp": g, "text": "t"} for g in range(3)],
        "units": [{"unit_id": "u0", "kind": "current_truth", "weight": 2.0},
                  {"unit_id": "u1", "kind": "current_truth", "weight": 1.0, "saturation": "linear"},
                  {"unit_id": "u2", "kind": "current_truth", "weight": 1.0,
                   "saturation": {"pwl": [[0, 0], [0.5, 0.8], [1.5, 1.3]]}},
                  {"unit_id": "u3", "kind": "current_truth", "weight": 1.0},
                  {"unit_id": "u4", "kind": "current_truth", "weight": 1.0}],
        "candidates": [
            {"candidate_id": "a", "experience_id": "e0", "representation": "fact", "cost": 1,
             "coverage": {"u0": 0.5, "u1": 0.75, "u2": 0.5, "u3": math.pi / 10}},
            {"candidate_id": "b", "experience_id": "e1", "representation": "fact", "cost": 1,
             "coverage": {"u0": 0.6, "u1": 1.5, "u2": 1.0, "u3": 0.5}},
            {"candidate_id": "c", "experience_id": "e2", "representation": "fact", "cost": 2,
             "coverage": {"u0": 1.0, "u4": 0.001}},
        ],
        "queries": [],
    }
    compiled = compile_package(Package.from_dict(data))
    plain = build_milp(compiled, 3, plain=True)
    model = on_unit_lattice(plain)
    assert model.integral_y is not None
    y = {int(u): plain.num_x + k for k, u in enumerate(plain.units)}
    # u0: steps of 0.1 (gcd of 0.5, 0.6, 1 and its cap 1), at most 10 of them, worth 2 * 0.1 each.
    assert model.integral_y[y[0] - plain.num_x]
    assert model.col_upper[y[0]] == 10.0 and model.objective[y[0]] == pytest.approx(0.2)
    row = int(np.flatnonzero(plain.row_index == y[0])[0])
    lo = int(np.searchsorted(plain.row_starts, row, side="right") - 1)
    coefficients = sorted(model.row_value[plain.row_starts[lo]:plain.row_starts[lo + 1]].tolist())
    assert coefficients == [-10.0, -6.0, -5.0, 1.0]
    # u1 (linear, no cap): steps of 0.75; u2 (two pieces), u3 (pi / 10) and u4 (1,000 steps of
    # 0.001 to its cap: finer than LATTICE_MAX_STEPS) stay continuous.
    assert model.integral_y[y[1] - plain.num_x] and math.isinf(model.col_upper[y[1]])
    assert model.objective[y[1]] == pytest.approx(0.75)
    assert not model.integral_y[y[2] - plain.num_x] and not model.integral_y[y[3] - plain.num_x]
    assert not model.integral_y[y[4] - plain.num_x] and model.col_upper[y[4]] == 1.0
    assert model.objective[y[2]] == plain.objective[y[2]] and model.col_upper[y[3]] == plain.col_upper[y[3]]
    # Nothing else moves: the x columns, the other rows, the bounds.
    assert np.array_equal(model.objective[:plain.num_x], plain.objective[:plain.num_x])
    assert np.array_equal(model.row_upper, plain.row_upper) and np.array_equal(model.row_index, plain.row_index)
    out = solve_highs(model, threads=1)
    opt = max(worth for _, worth in all_stores(compiled, 3))
    assert out.status == "optimal" and out.objective == pytest.approx(opt, rel=1e-9)


def test_a_model_without_such_units_is_returned_as_it_is() -> None:
    data = {
        "format": "memaudit.package/1", "package_id": "lattice/2",
        "objective": {"saturation": {"pwl": [[0, 0], [0.5, 0.8], [1.5, 1.3]]}}, "budgets": [1],
        "experiences": [{"experience_id": "e0", "timestamp": 0, "text": "t"}],
        "units": [{"unit_id": "u0", "kind": "current_truth", "weight": 1.0}],
        "candidates": [{"candidate_id": "a", "experience_id": "e0", "representation": "fact", "cost": 1,
                        "coverage": {"u0": 0.5}}],
        "queries": [],
    }
    plain = build_milp(compile_package(Package.from_dict(data)), 1, plain=True)
    assert on_unit_lattice(plain) is plain


@settings(max_examples=150, deadline=None)
@given(data=packages(max_candidates=9, max_units=4, extras=False), frac=st.sampled_from([0.2, 0.4, 0.7]),
       amounts=st.lists(st.sampled_from(AMOUNTS), min_size=1, max_size=6), capacity=st.sampled_from([1, 1, 2]))
def test_the_lattice_model_has_the_plain_models_optimum_and_lp(data: dict, frac: float, amounts: list[float],
                                                              capacity: int) -> None:
    compiled = compile_package(Package.from_dict(with_amounts(data, amounts, capacity)))
    budget = round(frac * float(compiled.cost.sum()), 2)
    plain = build_milp(compiled, budget, plain=True)
    if plain.approximation != "exact":
        return  # log1p: no exact MILP
    model = on_unit_lattice(plain)
    opt = max(worth for _, worth in all_stores(compiled, budget))
    out = solve_highs(model, threads=1)
    assert out.status == "optimal" and out.objective is not None
    assert out.objective == pytest.approx(opt, rel=1e-7, abs=1e-7)
    worth = float(compiled.objective(sorted(out.store or ())))
    assert worth == pytest.approx(opt, rel=1e-9, abs=1e-9)
    # Counting y in steps changes no LP: the relaxations agree.
    assert _lp_value(model) == pytest.approx(_lp_value(plain), rel=1e-7, abs=1e-7)


@pytest.mark.parametrize("n,seed,fraction", [(500, 2, 0.1), (700, 1, 0.1), (500, 2, 0.05)])
def test_the_race_on_the_lattice_model_proves_opt(monkeypatch: pytest.MonkeyPatch, n: int, seed: int,
                                                  fraction: float) -> None:
    # Entity timelines where the race's HiGHS takes the whole MILP, moved to the lattice model
    # at once: the result agrees with HiGHS alone on the tight model, whoever proves it.
    from memaudit_fast.solve import race

    monkeypatch.setattr(race, "RACE_LATTICE_AFTER", 1e-4)
    compiled, budget = _timeline(n, seed, fraction)
    alone = solve_highs(build_milp(compiled, budget), threads=1)
    assert alone.status == "optimal" and alone.objective is not None
    result = solve(compiled, budget=budget, time_limit=60, handoff_after=0.0)
    assert result.status == "optimal" and result.value == pytest.approx(alone.objective, rel=1e-9)
    assert result.upper_bound == pytest.approx(alone.objective, rel=1e-9)


def _timeline(n: int, seed: int, fraction: float):
    from oracles.timeline import timeline_package

    compiled = compile_package(Package.from_dict(timeline_package(n, seed=seed)))
    return compiled, float(round(fraction * float(compiled.cost.sum())))


def test_a_plain_run_out_of_time_goes_on_with_y_on_the_lattice() -> None:
    import threading

    from memaudit_fast import _core
    from memaudit_fast.solve.backends import HighsStop
    from memaudit_fast.solve.handoff import finish_with_highs
    from memaudit_fast.solve.race import _checked, _Race
    from memaudit_fast.solve.race_lattice import after_plain

    compiled, budget = _timeline(300, 3, 0.1)
    plain = build_milp(compiled, budget, plain=True)
    lattice = on_unit_lattice(plain)
    assert lattice is not plain
    opt = solve_highs(build_milp(compiled, budget), threads=1)
    assert opt.status == "optimal" and opt.objective is not None
    granularity = float(_core.objective_granularity(compiled.problem))
    no_floor = lambda: -math.inf  # noqa: E731
    race = _Race(HighsStop(), threading.Thread())

    def _on_the_lattice(compiled, budget, race, lattice, plain, heard, floor, left):
        return after_plain(compiled, budget, race, lattice, plain, heard, floor, left, granularity,
                           lambda store: _checked(compiled, budget, store))

    first = finish_with_highs(compiled, budget, range(compiled.num_candidates), None, time_limit=1e-4,
                              model=plain, stop=race.stop, granularity=granularity, floor=no_floor)
    assert first is not None and not first.proven and first.milp.status == "time_limit"
    out = _on_the_lattice(compiled, budget, race, lattice, first, None, no_floor, None)
    assert out.proven and out.milp.status == "optimal" and out.store is not None
    assert float(compiled.objective(sorted(out.store))) == pytest.approx(opt.objective, rel=1e-9)
    # The run's own limit spent on the plain model, or a proven plain run: that outcome stays.
    assert _on_the_lattice(compiled, budget, race, lattice, first, None, no_floor, first.milp.seconds) is first
    proven = finish_with_highs(compiled, budget, range(compiled.num_candidates), None, model=plain,
                               granularity=granularity, floor=no_floor)
    assert proven is not None and proven.proven
    assert _on_the_lattice(compiled, budget, race, lattice, proven, None, no_floor, None) is proven
    race.stop.set()  # the race was won elsewhere meanwhile
    assert _on_the_lattice(compiled, budget, race, lattice, first, None, no_floor, None) is first
