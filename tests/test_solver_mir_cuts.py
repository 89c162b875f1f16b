"""c-MIR cuts of the root LP (cpp/include/memaudit/mir_cuts.hpp, solve/mir_cuts.py).

A cut of one row holds at every point of the row with its lattice columns on their lattices
(the continuous part by an exact LP over each lattice point); the root LP with the cuts is
never below OPT (brute force over small packages on lattices, HiGHS on mid-size ones); and
they close the roots of two long dialogues that the coverage families leave open."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from memaudit_fast import _core
from memaudit_fast.model.compiled import budget_limit, compile_package
from memaudit_fast.model.package import Package
from memaudit_fast.solve import mir_cuts
from memaudit_fast.solve import root_lp as root_lp_module
from memaudit_fast.solve.backends import solve_highs
from memaudit_fast.solve.capacity import reduce_group_capacity
from memaudit_fast.solve.milp import build_milp, lattice_floor
from memaudit_fast.solve.root_lp import root_lp
from strategies import packages, with_amounts

# A column: (lower, upper, step); step 0 is continuous.
COLUMNS = st.sampled_from([(0.0, 1.0, 1.0), (0.0, 1.0, 1.0), (0.0, 1.0, 0.1), (0.0, 1.0, 0.25), (0.0, 3.0, 1.0),
                           (0.0, 1.5, 0.5), (0.0, 1.0, 0.0), (0.0, 2.5, 0.0), (0.0, math.inf, 0.0),
                           (0.0, math.inf, 0.5)])
COEFFICIENTS = st.sampled_from([-2.0, -1.0, -0.75, -0.6, -0.5, -0.3, -0.25, -0.1, 0.1, 0.25, 0.3, 0.5, 0.7, 1.0,
                                1.5, 3.0, 1.0 / 3.0, math.pi / 10])


def _lattice_points(lower: float, upper: float, step: float) -> list[float]:
    top = upper if math.isfinite(upper) else lower + 4 * step
    return [lower + k * step for k in range(round((top - lower) / step) + 1)]


@settings(max_examples=400, deadline=None)
@given(columns=st.lists(st.tuples(COLUMNS, COEFFICIENTS), min_size=1, max_size=5),
       rhs=st.sampled_from([-0.5, 0.0, 0.3, 0.5, 1.0, 1.7, 2.25]), data=st.data())
def test_a_mir_cut_holds_at_every_lattice_point_of_its_row(columns, rhs, data) -> None:
    lower = np.array([c[0][0] for c in columns])
    upper = np.array([c[0][1] for c in columns])
    step = np.array([c[0][2] for c in columns])
    a = np.array([c[1] for c in columns])
    # An LP point inside the box (not necessarily on the row: the separator must not care).
    point = np.array([data.draw(st.floats(lo, min(hi, lo + 3.0))) for lo, hi in zip(lower, upper)])
    n = a.size
    starts, cols, vals, out_rhs, eff, rows = _core.mir_cuts(
        np.array([0, n]), np.arange(n, dtype=np.int32), a, np.array([rhs]), lower, upper, step, point, 1e-9)
    if out_rhs.size == 0:
        return
    assert rows.tolist() == [0] and eff[0] > 1e-9
    g = np.zeros(n)
    g[cols[starts[0]:starts[1]]] = vals[starts[0]:starts[1]]
    # The cut is violated at the point, by its efficacy times its norm.
    assert g @ point - out_rhs[0] == pytest.approx(eff[0] * np.linalg.norm(g), rel=1e-6, abs=1e-9)
    on_lattice = [j for j in range(n) if step[j] > 0]
    free = [j for j in range(n) if step[j] == 0]
    # Unbounded lattice columns are checked up to four steps past the lower bound.
    for values in itertools.product(*[_lattice_points(lower[j], upper[j], step[j]) for j in on_lattice]):
        fixed = float(sum(a[j] * v for j, v in zip(on_lattice, values)))
        left = float(sum(g[j] * v for j, v in zip(on_lattice, values)))
        if not free:
            if fixed <= rhs + 1e-12:
                assert left <= out_rhs[0] + 1e-9
            continue
        # The most the cut's left side takes over the continuous columns the row allows.
        res = linprog(-g[free], A_ub=[a[free]], b_ub=[rhs - fixed],
                      bounds=[(lower[j], upper[j] if math.isfinite(upper[j]) else None) for j in free], method="highs")
        if res.status == 2:  # the row allows no continuous part at these values
            continue
        assert res.status == 0, "the cut's left side is unbounded over the row"
        assert left - res.fun <= out_rhs[0] + 1e-9 * max(1.0, abs(out_rhs[0]))


def test_a_coverage_row_cut_holds_at_every_store_and_beats_highs_cut_there() -> None:
    # y <= 0.3 x_s + x_f + 0.5 x_h (y <= 1, continuous) at y = 0.98, x_s = 0.6, x_f = 0.3,
    # x_h = 0.5. HiGHS's root finds y <= 0.6 + 0.4 x_f + 0.2 x_h here (x_s from its upper bound,
    # delta = 0.5); the separator must find a cut at least as efficacious that no store violates.
    a = np.array([1.0, -0.3, -1.0, -0.5])
    point = np.array([0.98, 0.6, 0.3, 0.5])
    _, cols, vals, rhs, eff, _rows = _core.mir_cuts(
        np.array([0, 4]), np.arange(4, dtype=np.int32), a, np.array([0.0]), np.zeros(4), np.ones(4),
        np.array([0.0, 1.0, 1.0, 1.0]), point, 1e-6)
    assert rhs.size == 1
    g = np.zeros(4)
    g[cols] = vals
    highs = np.array([1.0, 0.0, -0.4, -0.2])
    assert eff[0] >= (highs @ point - 0.6) / np.linalg.norm(highs) - 1e-12
    for xs in itertools.product([0.0, 1.0], repeat=3):
        y = min(1.0, 0.3 * xs[0] + xs[1] + 0.5 * xs[2])
        for value in (0.0, y):
            assert g @ np.array([value, *xs]) <= rhs[0] + 1e-12


def test_bad_rows_are_refused_with_the_argument_named() -> None:
    ones = np.ones(2)
    with pytest.raises(ValueError, match="row_starts"):
        _core.mir_cuts(np.array([0, 3]), np.array([0, 1], dtype=np.int32), ones, np.array([1.0]), ones * 0, ones,
                       ones, ones * 0.5)
    with pytest.raises(IndexError, match="row column 2"):
        _core.mir_cuts(np.array([0, 2]), np.array([0, 2], dtype=np.int32), ones, np.array([1.0]), ones * 0, ones,
                       ones, ones * 0.5)
    with pytest.raises(ValueError, match="one value per column"):
        _core.mir_cuts(np.array([0, 2]), np.array([0, 1], dtype=np.int32), ones, np.array([1.0]), ones * 0, ones,
                       np.ones(3), ones * 0.5)


# Amounts on lattices (tenths, quarters, thirds) and one on none.
AMOUNTS = [0.1, 0.25, 0.3, 0.5, 0.6, 0.7, 1.0, 1.0 / 3.0, 2.0 / 3.0, math.pi / 10]


def _brute_opt(compiled, budget: float) -> float:
    capacity = int(compiled.group_capacity)
    groups: dict[int, list[int]] = {}
    for u in range(compiled.num_candidates):
        groups.setdefault(int(compiled.group_of[u]), []).append(u)
    options = [[c for k in range(capacity + 1) for c in itertools.combinations(members, k)] for members in groups.values()]
    best = 0.0
    for choice in itertools.product(*options):
        store = [u for part in choice for u in part]
        if sum(float(compiled.cost[u]) for u in store) <= budget_limit(budget):
            best = max(best, float(compiled.objective(store)))
    return best


@settings(max_examples=150, deadline=None)
@given(data=packages(max_candidates=12, max_units=5, extras=False), frac=st.sampled_from([0.2, 0.35, 0.5, 0.7]),
       amounts=st.lists(st.sampled_from(AMOUNTS), min_size=1, max_size=6), capacity=st.sampled_from([1, 1, 2]))
def test_the_root_lp_with_mir_cuts_is_never_below_opt(data, frac, amounts, capacity) -> None:
    compiled = compile_package(Package.from_dict(with_amounts(data, amounts, capacity)))
    budget = round(frac * float(compiled.cost.sum()), 2)
    opt = _brute_opt(compiled, budget)
    if capacity > 1:
        # The core's cuts and reductions are one per group: the root LP takes no other package,
        # and the race runs on the package of composites (solve/capacity.py).
        assert root_lp(compiled, build_milp(compiled, budget), seconds=5.0) is None
        compiled = reduce_group_capacity(compiled)[0]
    lp = root_lp(compiled, build_milp(compiled, budget), seconds=5.0)
    if lp is None:
        return
    assert lp.bound >= opt - 1e-9 * max(1.0, opt)


def _timeline(n: int, seed: int) -> object:
    from oracles.timeline import timeline_package

    return compile_package(Package.from_dict(timeline_package(n, seed=seed)))


def _dialogue(n: int, seed: int) -> object:
    from oracles.dialogue import dialogue_package

    return compile_package(Package.from_dict(dialogue_package(n, seed=seed)))


@pytest.mark.parametrize("make,n,seed", [(_timeline, 200, 1), (_timeline, 300, 4), (_dialogue, 200, 2),
                                         (_dialogue, 300, 5)])
def test_the_root_lp_with_mir_cuts_is_never_below_highs_optimum(make, n: int, seed: int,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = make(n, seed)
    made = []
    separate = mir_cuts.separate_mir_cuts

    def counted(*args, **kwargs):
        out = separate(*args, **kwargs)
        made.append(len(out))
        return out

    monkeypatch.setattr(mir_cuts, "separate_mir_cuts", counted)
    for frac in (0.05, 0.1, 0.2, 0.4):
        budget = float(round(frac * float(compiled.cost.sum())))
        lp = root_lp(compiled, build_milp(compiled, budget), seconds=5.0)
        reference = solve_highs(build_milp(compiled, budget), time_limit=60)
        assert reference.status == "optimal" and lp is not None
        assert lp.bound >= reference.objective - 1e-9 * max(1.0, reference.objective)
    assert sum(made) > 0  # the stage ran and separated cuts


@pytest.mark.parametrize("n,seed,frac,opt", [(1000, 0, 0.05, 413.8), (3000, 6, 0.4, 1308.75)])
def test_mir_cuts_close_long_dialogue_roots_that_the_families_leave_open(n: int, seed: int, frac: float,
                                                                          opt: float) -> None:
    # Dialogue 1,002 @ 5%: the families leave the LP at 415.24; with the c-MIR rounds it ends at
    # OPT (on a lattice of 0.05). Dialogue 3,000 @ 40%: 1308.80 -> 1308.75 = OPT.
    compiled = _dialogue(n, seed)
    budget = float(round(frac * float(compiled.cost.sum())))
    granularity = float(_core.objective_granularity(compiled.problem))
    reference = solve_highs(build_milp(compiled, budget), time_limit=120)
    assert reference.status == "optimal" and reference.objective == pytest.approx(opt, abs=1e-6)
    without = root_lp(compiled, build_milp(compiled, budget), seconds=5.0, mir_rounds=0)
    with_mir = root_lp(compiled, build_milp(compiled, budget), seconds=5.0)
    assert without is not None and with_mir is not None
    assert lattice_floor(without.bound, granularity) > opt + granularity / 2
    assert with_mir.bound >= opt - 1e-9 * opt
    assert lattice_floor(with_mir.bound, granularity) == pytest.approx(opt, abs=1e-9)


@pytest.mark.parametrize("seed,opt", [(10, 1293.4), (6, 1308.75)])
def test_a_settled_root_skips_the_envelope_rounds_and_ends_where_every_round_does(seed: int, opt: float,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # Dialogue 3,004 @ 10%, seed 10: two rounds of the families take the LP to OPT (1293.4, on a
    # lattice of 0.05) and the third moves nothing, so the stage goes on to c-MIR rounds of a few
    # tableau rows. Seed 6 settles one step above OPT (1308.80): the settled c-MIR round must still
    # take it there. Both end where the whole stage (envelope rounds, c-MIR of MIR_TABLEAU_ROWS) ends.
    compiled = _dialogue(3000, seed)
    budget = float(round(0.1 * float(compiled.cost.sum())))
    granularity = float(_core.objective_granularity(compiled.problem))
    reference = solve_highs(build_milp(compiled, budget), time_limit=120)
    assert reference.status == "optimal" and reference.objective == pytest.approx(opt, abs=1e-6)
    rows_asked: list[int | None] = []
    stage = root_lp_module._mir_stage

    def spied(*args, **kwargs):
        rows_asked.append(kwargs.get("tableau_rows"))
        return stage(*args, **kwargs)

    monkeypatch.setattr(root_lp_module, "_mir_stage", spied)
    settled = root_lp(compiled, build_milp(compiled, budget), seconds=5.0)
    monkeypatch.setattr(root_lp_module, "ROOT_LP_SETTLED_GAIN", -math.inf)  # never settled
    whole = root_lp(compiled, build_milp(compiled, budget), seconds=5.0)
    assert rows_asked == [root_lp_module.ROOT_LP_SETTLED_TABLEAU_ROWS, None]
    assert settled is not None and whole is not None
    assert settled.bound >= opt - 1e-9 * opt
    assert lattice_floor(settled.bound, granularity) == pytest.approx(opt, abs=1e-9)
    assert lattice_floor(whole.bound, granularity) == pytest.approx(opt, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(shape=st.tuples(st.integers(0, 6), st.integers(1, 8), st.integers(1, 7)), data=st.data())
def test_rows_times_is_the_entrywise_sum_of_the_rows(shape, data) -> None:
    # lam A by the core, against numpy's bincount over the entries row by row (the order the
    # separator used before): bit for bit, so that the cuts do not move.
    k, m, n = shape
    entries = data.draw(st.lists(st.tuples(st.integers(0, m - 1), st.integers(0, n - 1),
                                           st.floats(-5, 5, allow_nan=False)), max_size=30))
    entries.sort(key=lambda e: e[0])
    row_of = np.array([e[0] for e in entries], dtype=np.int64)
    col = np.array([e[1] for e in entries], dtype=np.int64)
    value = np.array([e[2] for e in entries], dtype=np.float64)
    lam = np.array(data.draw(st.lists(st.sampled_from([0.0, 1.0, -0.5, 1e-3, 2.75, math.pi]), min_size=k * m,
                                      max_size=k * m)), dtype=np.float64).reshape(k, m)
    starts = np.searchsorted(row_of, np.arange(m + 1)).astype(np.int64)
    out = _core.rows_times(starts, col.astype(np.int32), value, n, lam)
    assert out.shape == (k, n)
    for t in range(k):
        expected = np.bincount(col, weights=value * lam[t][row_of], minlength=n)
        assert np.array_equal(out[t], expected)


def test_rows_times_refuses_rows_that_do_not_fit() -> None:
    ones = np.ones(2)
    with pytest.raises(ValueError, match="row_starts"):
        _core.rows_times(np.array([0, 1]), np.array([0, 1], dtype=np.int32), ones, 2, np.ones((1, 1)))
    with pytest.raises(IndexError, match="not one of the 2 columns"):
        _core.rows_times(np.array([0, 2]), np.array([0, 2], dtype=np.int32), ones, 2, np.ones((1, 1)))
    with pytest.raises(ValueError, match="two-dimensional"):
        _core.rows_times(np.array([0, 2]), np.array([0, 1], dtype=np.int32), ones, 2, np.ones(1))
