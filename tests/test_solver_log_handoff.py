"""The solver log, start stores, the candidates left open after the root and the HiGHS
hand-off (every path of ``proved_by``), SIGTERM in ``memaudit solve``."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import threading
import time
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memaudit_fast import _core
from memaudit_fast.cli import solve as solve_cli
from memaudit_fast.cli.main import main
from memaudit_fast.errors import UsageError
from memaudit_fast.solve.exact import format_progress, solve
from memaudit_fast.suites.small import generate_package
from oracles.exact import brute_force, objective, synthetic_instance
from oracles.packages import strongly_correlated_knapsack
from strategies import instances

TOL = 1e-9


#: The race's engines: HiGHS, or the root LP beside it (its bound met by a store, or a store
#: that fixing by its reduced costs leaves nothing to beat). On hard_package the root LP with
#: the envelope cuts proves the store before HiGHS does.
RACE_ENGINES = ("highs", "root_lp")


def hard_package(fraction: float = 0.1) -> dict:
    """About 2,400 candidates at 10% of the total cost: the root leaves a real gap."""
    data = generate_package("base", seed=0, scale=50)
    data["budgets"] = [round(fraction * sum(c["cost"] for c in data["candidates"]))]
    return data


@settings(max_examples=150, deadline=None)
@given(inst=instances(max_candidates=10), frac=st.sampled_from([0.2, 0.4, 0.7]), limit=st.sampled_from([1, 2, 5]))
def test_open_candidates_hold_every_better_store(inst: Any, frac: float, limit: int) -> None:
    # Stopped after a few nodes: OPT is the incumbent or a store made of open candidates only.
    budget = float(np.round(frac * inst.cost.sum(), 2))
    (r,) = _core.solve(inst.problem(), [budget], node_limit=limit)
    opt, _ = brute_force(inst, budget)
    if r.status == "optimal":
        assert len(r.open_candidates) == 0
        assert r.value >= opt - TOL * max(1.0, opt)
        return
    closed = np.setdiff1d(np.arange(inst.num_candidates), np.asarray(r.open_candidates))
    cost = inst.cost.copy()
    cost[closed] = budget + 1.0 + 2.0 * abs(budget)  # out of every store
    restricted, _ = brute_force(dataclasses.replace(inst, cost=cost), budget)
    assert max(r.value, restricted) >= opt - TOL * max(1.0, opt)


@settings(max_examples=60, deadline=None)
@given(inst=instances(max_candidates=9), frac=st.sampled_from([0.3, 0.6]))
def test_start_store_is_a_floor(inst: Any, frac: float) -> None:
    budget = float(np.round(frac * inst.cost.sum(), 2))
    opt, store = brute_force(inst, budget)
    (r,) = _core.solve(inst.problem(), [budget], node_limit=0, start=store)
    assert r.value >= objective(inst, store) - TOL * max(1.0, opt)
    assert r.upper_bound >= opt - TOL * max(1.0, opt)


def test_start_store_that_does_not_fit_is_ignored() -> None:
    inst = synthetic_instance(60, seed=3)
    everything = list(range(inst.num_candidates))
    (r,) = _core.solve(inst.problem(), [5.0], start=everything)
    assert r.status == "optimal" and r.cost <= 5.0
    with pytest.raises(ValueError, match="start"):
        _core.solve(inst.problem(), [5.0], start=[-1])


def test_log_lines_bracket_the_optimum() -> None:
    from memaudit_fast.model.compiled import compile_package
    from memaudit_fast.solve.backends import solve_highs
    from memaudit_fast.solve.milp import build_milp

    c = compile_package(generate_package("base", seed=0, scale=25))  # about 1,200 candidates
    budget = float(round(0.2 * float(c.cost.sum())))
    lines: list[Any] = []
    (r,) = _core.solve(c.problem, [budget], time_limit=1.5, progress=lines.append, progress_interval=0.2)
    # A solve that is still running logs every 0.2 s; one the root cuts prove early may not.
    assert len(lines) >= 1 or r.seconds < 0.4, f"{r.seconds:.2f} s of search and no log line"
    reference = solve_highs(build_milp(c, budget))
    assert reference.status == "optimal" and reference.objective is not None
    opt = reference.objective
    for line in lines:
        assert line.budget == budget
        assert line.incumbent <= opt + 1e-6 and line.upper_bound >= opt - 1e-6
        assert 0.0 <= line.gap <= 1.0
        assert "nodes" in format_progress(line) and "gap" in format_progress(line)
    assert [x.nodes for x in lines] == sorted(x.nodes for x in lines)
    assert r.upper_bound <= min(x.upper_bound for x in lines) + 1e-9


def test_log_callback_error_stops_and_propagates() -> None:
    data = hard_package()

    def fail(line: Any) -> None:
        raise RuntimeError("log sink broke")

    with pytest.raises(RuntimeError, match="log sink broke"):
        solve(data, log=fail, log_interval=0.05)


def test_handoff_proves_what_the_search_left_open() -> None:
    data = hard_package()
    (budget,) = data["budgets"]
    plain = solve(data, budget=budget, time_limit=0.5, finish=None)
    assert plain.status == "time_limit" and plain.proved_by is None
    finished = solve(data, budget=budget, finish="highs", handoff_after=0.5, time_limit=120)
    assert finished.status == "optimal" and finished.proven_optimal
    assert finished.proved_by in RACE_ENGINES
    assert finished.value >= plain.value
    record = finished.to_record()
    assert record["proved_by"] == finished.proved_by and record["status"] == "optimal"
    from memaudit_fast.model.compiled import compile_package
    from memaudit_fast.solve.backends import solve_highs
    from memaudit_fast.solve.milp import build_milp

    c = compile_package(data)
    reference = solve_highs(build_milp(c, budget))
    assert reference.status == "optimal" and reference.objective is not None
    assert finished.value == pytest.approx(reference.objective, rel=1e-6)
    assert finished.value == pytest.approx(c.objective([c.index_of()[i] for i in finished.selected]), rel=1e-12)


def test_the_race_is_the_default_unless_a_node_limit_is_set() -> None:
    # A user who asks for nothing gets the fastest exact path: the search and HiGHS racing.
    data = hard_package()
    (budget,) = data["budgets"]
    default = solve(data, budget=budget, time_limit=120)
    assert default.status == "optimal" and default.proved_by in RACE_ENGINES
    auto = solve(data, budget=budget, time_limit=120, finish="auto")
    assert auto.status == "optimal" and auto.value == pytest.approx(default.value, rel=1e-9)
    # A node limit asks for the branch-and-bound's own nodes: no race then, unless asked for.
    limited = solve(data, budget=budget, node_limit=2_000, time_limit=120)
    assert limited.status == "node_limit" and limited.proved_by is None
    raced = solve(data, budget=budget, node_limit=10**9, time_limit=120, finish="highs", handoff_after=0.0)
    assert raced.status == "optimal" and raced.proved_by in RACE_ENGINES
    with pytest.raises(UsageError, match="finish must be 'auto'"):
        solve(data, budget=budget, finish="gurobi")


def test_cli_finish_none_runs_the_search_alone(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "hard.json"
    path.write_text(json.dumps(hard_package()))
    assert main(["solve", str(path), "--time-limit", "0.5", "--finish", "none", "--json"]) == 0
    (record,) = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert record["status"] == "time_limit" and record["proved_by"] is None
    assert main(["solve", str(path), "--time-limit", "120", "--json"]) == 0
    (record,) = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert record["status"] == "optimal" and record["proved_by"] in RACE_ENGINES


def test_handoff_before_the_root_is_done_takes_every_candidate(monkeypatch: pytest.MonkeyPatch) -> None:
    # handoff_after=0 stops the budget at its first progress line, long before the root of a
    # package this size is done: HiGHS must then get the whole problem, not an empty open set.
    # The root LP runs without its c-MIR rounds, which prove this budget before HiGHS does.
    import functools

    from memaudit_fast.solve import race
    from memaudit_fast.solve.root_lp import root_lp

    monkeypatch.setattr(race, "root_lp", functools.partial(root_lp, mir_rounds=0))
    data = generate_package("base", seed=0, scale=70)  # about 3,300 candidates
    budget = float(round(0.2 * sum(c["cost"] for c in data["candidates"])))
    lines: list[Any] = []
    finished = solve(data, budget=budget, finish="highs", handoff_after=0.0, log=lines.append, log_interval=0.01)
    assert lines and not lines[0].root_done
    assert finished.status == "optimal" and finished.proved_by == "highs"
    from memaudit_fast.model.compiled import compile_package
    from memaudit_fast.solve.backends import solve_highs
    from memaudit_fast.solve.milp import build_milp

    c = compile_package(data)
    reference = solve_highs(build_milp(c, budget))
    assert reference.status == "optimal" and reference.objective is not None
    assert finished.value == pytest.approx(reference.objective, rel=1e-6)
    assert finished.value == pytest.approx(c.objective([c.index_of()[i] for i in finished.selected]), rel=1e-12)


def test_a_race_that_does_not_win_leaves_the_proof_to_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    # The race never counts as won here: the search goes on to its own proof, and the race is
    # stopped once the search has it.
    from memaudit_fast.solve import exact

    monkeypatch.setattr(exact._Race, "proven", lambda self: False)
    started: list[tuple[float, bool, int]] = []
    races: list[Any] = []
    real_start = exact._start_race

    def start(compiled: Any, budget: float, line: Any, time_limit: Any, start_after: float = 0.0,
              budget_stop: Any = None, previous: Any = None) -> Any:
        started.append((budget, bool(line.root_done), len(line.open_candidates)))
        # Without the BudgetStop, a proof of the race does not reach the search either.
        races.append(real_start(compiled, budget, line, time_limit, start_after, None, previous))
        return races[-1]

    monkeypatch.setattr(exact, "_start_race", start)
    data = generate_package("base", seed=0, scale=25)  # about 1,200 candidates: proven in well under a minute
    budget = float(round(0.1 * sum(c["cost"] for c in data["candidates"])))
    lines: list[Any] = []
    finished = solve(data, budget=budget, finish="highs", handoff_after=0.0, time_limit=120,
                     log=lines.append, log_interval=0.001)
    # (a second start is the race moving to the root's open candidates)
    assert {b for b, _, _ in started} == {float(budget)} and len(started) <= 2
    assert finished.status == "optimal" and finished.proved_by == "branch_and_bound"
    for race in races:  # stopped when the search proved: it ends on its own, soon
        assert race.stop.is_set()
        race.thread.join(timeout=30.0)
        assert not race.thread.is_alive()
    from memaudit_fast.model.compiled import compile_package
    from memaudit_fast.solve.backends import solve_highs
    from memaudit_fast.solve.milp import build_milp

    reference = solve_highs(build_milp(compile_package(data), budget))
    assert reference.objective is not None
    assert finished.value == pytest.approx(reference.objective, rel=1e-6)


def test_race_after_the_root_gets_the_open_candidates_and_the_incumbent() -> None:
    # A log line after the root carries what the root left open and the search's incumbent
    # (indices of the caller's package); the race started from such a line proves the optimum.
    from memaudit_fast.model.compiled import compile_package
    from memaudit_fast.solve import exact
    from memaudit_fast.solve.backends import solve_highs
    from memaudit_fast.solve.milp import build_milp

    data = hard_package()
    (budget,) = data["budgets"]
    c = compile_package(data)
    lines: list[Any] = []
    # The search alone: a race of its own may prove the package before its root is done.
    solve(c, budget=budget, time_limit=3.0, log=lines.append, log_interval=0.01, finish=None)
    after_root = [line for line in lines if line.root_done]
    assert after_root, "the root of this package is done well within 3 s"
    line = after_root[0]
    open_candidates, incumbent = list(line.open_candidates), list(line.incumbent_store)
    assert 0 < len(open_candidates) < c.num_candidates and incumbent
    assert sorted(set(open_candidates)) == open_candidates and max(open_candidates) < c.num_candidates
    assert not _infeasible_store(c, incumbent, budget)
    for seen in lines[:: max(1, len(lines) // 10)]:  # each line's store is the incumbent it reports
        assert float(c.objective(sorted(seen.incumbent_store))) == pytest.approx(seen.incumbent, rel=1e-9, abs=1e-12)
    race = exact._start_race(c, float(budget), line, None)
    race.thread.join()
    assert race.proven()
    reference = solve_highs(build_milp(c, budget))
    assert reference.objective is not None
    # OPT is the incumbent's value or that of a store of open candidates, which HiGHS proved.
    found = [float(c.objective(sorted(incumbent)))]
    if race.outcome.store is not None:
        store = sorted(race.outcome.store)
        assert set(store) <= set(open_candidates) and not _infeasible_store(c, store, budget)
        found.append(float(c.objective(store)))
    assert max(found) == pytest.approx(reference.objective, rel=1e-6)


def _infeasible_store(c: Any, store: list[int], budget: float) -> bool:
    groups = [int(c.group_of[i]) for i in store]
    return len(set(groups)) < len(groups) or float(sum(float(c.cost[i]) for i in store)) > budget * (1 + 1e-12)


def test_proved_by_branch_and_bound_and_no_handoff_when_proven() -> None:
    data = generate_package("base", seed=1)
    for r in solve(data, finish="highs"):
        assert r.status == "optimal" and r.proved_by == "branch_and_bound"
    with pytest.raises(Exception, match="finish"):
        solve(data, finish="cplex")


def test_cli_sigterm_keeps_the_record_and_says_how_to_stop(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "hard.json"
    path.write_text(json.dumps(strongly_correlated_knapsack()))
    monkeypatch.setattr(solve_cli, "LONG_SOLVE_NOTICE", 1.0)
    timer = threading.Timer(2.5, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    try:
        # The search alone: the root LP's c-MIR cuts prove this knapsack in 0.02 s.
        code = main(["solve", str(path), "--json", "--verbose", "--finish", "none"])
    finally:
        timer.cancel()
    out, err = capsys.readouterr()
    assert code == solve_cli.EXIT_INTERRUPTED
    (record,) = [json.loads(line) for line in out.splitlines() if line.strip()]
    assert record["status"] == "interrupted" and record["proved_by"] is None
    assert record["upper_bound"] >= record["opt"] > 0 and record["selected"]
    assert err.count("still solving after") == 1 and "SIGTERM" in err
    assert "incumbent" in err and "gap" in err  # the --verbose log
    assert signal.getsignal(signal.SIGTERM) is not solve_cli._terminate  # handler restored


def test_a_budget_stop_ends_only_the_budget_it_names() -> None:
    from memaudit_fast.model.compiled import compile_package

    data = hard_package()
    (budget,) = data["budgets"]
    c = compile_package(data)
    stop = _core.BudgetStop()
    assert np.isnan(stop.budget)
    small = 8.0
    reference = _core.solve(c.problem, [small])[0]
    assert str(reference.status) == "optimal"

    def name_it() -> None:
        stop.stop(budget)

    # Named from another thread while the search of `budget` runs (its root alone takes longer
    # than the delay): that search stops, with a valid store and bound; the other budget is
    # solved as usual, and no progress callback is involved.
    timer = threading.Timer(0.05, name_it)
    timer.start()
    try:
        stopped, other = _core.solve(c.problem, [budget, small], time_limit=60.0, budget_stop=stop)
    finally:
        timer.cancel()
    assert stop.budget == budget
    assert str(stopped.status) == "time_limit" and stopped.seconds < 5.0
    assert stopped.value <= stopped.upper_bound + TOL
    assert stopped.value == pytest.approx(c.objective(list(stopped.selected)), rel=1e-12)
    assert str(other.status) == "optimal" and other.value == pytest.approx(reference.value, rel=1e-12)


def test_a_race_needs_no_progress_line_after_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    # Without a log, a solve with finish gets one line per budget (to start its race): each call
    # into Python from the search waits for the GIL, which a racing HiGHS holds often.
    from memaudit_fast.solve import exact

    # One more comes when the root is done, if that is after the first (the race may move to
    # the candidates the root left open).
    seen: list[tuple[float, bool]] = []
    real = exact.handoff_watch

    def counting(*args: Any, **kwargs: Any) -> Any:
        watch, interval, first = real(*args, **kwargs)

        def counted(line: Any) -> bool:
            seen.append((float(line.seconds), bool(line.root_done)))
            return watch(line)  # type: ignore[no-any-return]

        return counted, interval, first

    monkeypatch.setattr(exact, "handoff_watch", counting)
    data = hard_package()
    (budget,) = data["budgets"]
    result = solve(data, budget=budget, finish="highs", handoff_after=0.05, time_limit=1.0)
    assert result.status in ("optimal", "time_limit")
    assert 1 <= len(seen) <= 2 and 0.02 <= seen[0][0] < 0.5
    if len(seen) == 2:
        assert not seen[0][1] and seen[1][1] and seen[1][0] >= seen[0][0]


def test_a_begun_log_hears_when_the_root_is_done() -> None:
    # The first line comes at once, the next would come after an hour: the root's end is
    # reported anyway, with the candidates it left open.
    data = hard_package()
    (budget,) = data["budgets"]
    lines: list[Any] = []

    def log(line: Any) -> bool:
        lines.append((bool(line.root_done), len(line.open_candidates), float(line.seconds)))
        return False

    from memaudit_fast.model.compiled import compile_package

    compiled = compile_package(data)
    (r,) = _core.solve(compiled.problem, [float(budget)], progress=log, progress_interval=3600.0,
                       progress_first=1e-6, time_limit=5.0)
    assert lines and not lines[0][0]
    done = [line for line in lines if line[0]]
    assert done, lines
    if r.status != "optimal" or r.nodes > 1:  # the tree went on after the root
        assert done[0][1] > 0
    # A solve that ends before its first line stays silent.
    quiet: list[Any] = []
    _core.solve(compiled.problem, [float(budget)], progress=lambda line: quiet.append(line) or False,
                progress_interval=3600.0, progress_first=3600.0, time_limit=5.0)
    assert quiet == []


class _Line:
    def __init__(self, seconds: float, root_done: bool = False, open_candidates: tuple[int, ...] = (),
                 upper_bound: float = float("inf")) -> None:
        self.budget, self.seconds, self.root_done = 10.0, seconds, root_done
        self.open_candidates, self.incumbent_store = list(open_candidates), []
        self.upper_bound = upper_bound


def test_a_race_moves_to_the_roots_open_candidates_only_when_they_are_few() -> None:
    import time

    from memaudit_fast.solve import exact

    started: list[tuple[bool, Any]] = []
    release = threading.Event()
    ran = [0.1]  # seconds HiGHS has run on the whole MILP when the root is done

    def start(budget: float, line: Any, after: float, previous: Any = None) -> Any:
        if previous is not None:
            assert previous.stop.is_set()  # the race it replaces was stopped first
        race = exact._Race(exact.HighsStop(), threading.Thread(target=release.wait), reduced=bool(line.root_done),
                           runs_at=time.monotonic() - ran[0])
        race.thread.start()
        started.append((bool(line.root_done), previous))
        return race

    def run(lines: list[_Line]) -> list[tuple[bool, Any]]:
        started.clear()
        races: dict[float, Any] = {}
        watch, _, _ = exact.handoff_watch(None, 1.0, 0.05, races, start, 100)
        for line in lines:
            watch(line)
        return list(started)

    try:
        few = tuple(range(int(exact.RACE_RESTART_SHARE * 100)))
        many = tuple(range(int(exact.RACE_RESTART_SHARE * 100) + 1))
        moved = run([_Line(0.05), _Line(0.2, True, few), _Line(0.3, True, few)])
        assert [done for done, _ in moved] == [False, True] and moved[1][1] is not None  # once
        assert [done for done, _ in run([_Line(0.05), _Line(0.2, True, many)])] == [False]
        assert [done for done, _ in run([_Line(0.05), _Line(0.2, True, ())])] == [False]  # the root closed
        assert [done for done, _ in run([_Line(0.3, True, few), _Line(0.4, True, few)])] == [True]  # reduced already
        # HiGHS has run past RACE_MOVE_LATEST: it keeps the whole MILP, its own root done.
        ran[0] = exact.RACE_MOVE_LATEST + 1.0
        assert [done for done, _ in run([_Line(0.05), _Line(0.2, True, few)])] == [False]
    finally:
        release.set()


def test_a_race_whose_highs_bound_is_already_tighter_than_the_search_keeps_the_whole_milp() -> None:
    # HiGHS's root (its cuts) has proven a bound at or under the search's: a move to the open
    # candidates would throw that work away, however few they are.
    import time

    from memaudit_fast.solve import exact

    started: list[bool] = []
    release = threading.Event()
    highs_bound = [float("inf")]

    def start(budget: float, line: Any, after: float, previous: Any = None) -> Any:
        race = exact._Race(exact.HighsStop(), threading.Thread(target=release.wait), reduced=bool(line.root_done),
                           runs_at=time.monotonic() - 0.1)
        race.stop.mip_bound = highs_bound[0]
        race.thread.start()
        started.append(bool(line.root_done))
        return race

    def run(search_bound: float) -> list[bool]:
        started.clear()
        races: dict[float, Any] = {}
        watch, _, _ = exact.handoff_watch(None, 1.0, 0.05, races, start, 100)
        for line in (_Line(0.05), _Line(0.2, True, (1, 2, 3), upper_bound=search_bound)):
            watch(line)
        return list(started)

    try:
        assert run(100.0) == [False, True]  # HiGHS has no bound yet: it moves
        highs_bound[0] = 100.5
        assert run(100.0) == [False, True]  # HiGHS's bound is looser than the search's: it moves
        highs_bound[0] = 99.75
        assert run(100.0) == [False]  # tighter: it stays
        assert run(99.75) == [False]  # as tight: it stays
    finally:
        release.set()


def test_highs_stop_hears_the_mip_bound_of_the_solve_it_watches() -> None:
    from memaudit_fast.model.compiled import compile_package
    from memaudit_fast.solve.backends import HighsStop, solve_highs
    from memaudit_fast.solve.milp import build_milp

    compiled = compile_package(generate_package("base", seed=3, scale=4))
    budget = 0.1 * float(compiled.cost.sum())
    stop = HighsStop()
    assert stop.mip_bound == float("inf")
    out = solve_highs(build_milp(compiled, budget), stop=stop)
    exact_value = solve(compiled, budget=budget, finish=None).value
    assert out.status == "optimal"
    # A bound HiGHS proved during its solve: finite, never under OPT.
    assert np.isfinite(stop.mip_bound) and stop.mip_bound >= exact_value - 1e-6


def test_a_child_stop_ends_its_solve_when_either_it_or_its_parent_is_set() -> None:
    from memaudit_fast.model.compiled import compile_package
    from memaudit_fast.solve.backends import HighsStop, solve_highs
    from memaudit_fast.solve.milp import build_milp

    parent = HighsStop()
    child = HighsStop(parent=parent)
    assert not child.is_set()
    child.set()
    assert child.is_set() and not parent.is_set()  # a child's stop is its own
    parent = HighsStop()
    other = HighsStop(parent=parent)
    parent.set()
    assert other.is_set()
    compiled = compile_package(generate_package("base", seed=3, scale=4))
    out = solve_highs(build_milp(compiled, 0.1 * float(compiled.cost.sum())), stop=other)
    assert out.status == "interrupted"  # set before the solve began: HiGHS stops at its first check


def test_a_race_that_has_not_begun_moves_to_the_open_candidates_whatever_their_share() -> None:
    # HiGHS still waiting for handoff_after (or just begun) loses nothing by moving to the
    # smaller model, however many candidates the root left open.
    import time

    from memaudit_fast.solve import exact

    started: list[bool] = []
    release = threading.Event()

    def start(budget: float, line: Any, after: float, previous: Any = None) -> Any:
        race = exact._Race(exact.HighsStop(), threading.Thread(target=release.wait), reduced=bool(line.root_done),
                           runs_at=time.monotonic() + (10.0 if not line.root_done else 0.0))
        race.thread.start()
        started.append(bool(line.root_done))
        return race

    try:
        races: dict[float, Any] = {}
        watch, _, _ = exact.handoff_watch(None, 1.0, 0.05, races, start, 100)
        many = tuple(range(90))
        due = 0.05 - exact.RACE_PREPARE  # the model is built from here; HiGHS runs from 0.05
        watch(_Line(due))
        watch(_Line(due + 0.001, True, many))
        assert started == [False, True]
        assert races[10.0].reduced
    finally:
        release.set()


def test_the_race_starts_highs_from_no_store_on_the_whole_milp_and_on_the_open_candidates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memaudit_fast.model.compiled import compile_package
    from memaudit_fast.solve import exact, handoff

    starts: list[Any] = []
    real = handoff.solve_highs

    def recording(model: Any, **kw: Any) -> Any:
        starts.append(kw.get("start_store"))
        return real(model, **kw)

    monkeypatch.setattr(handoff, "solve_highs", recording)
    data = generate_package("base", seed=0)
    c = compile_package(data)
    budget = float(data["budgets"][-1])
    whole = _Line(0.05)
    whole.budget, whole.incumbent_store = budget, [0]
    after_root = _Line(0.06, True, tuple(range(c.num_candidates)))
    after_root.budget, after_root.incumbent_store = budget, [0]
    for line in (whole, after_root):
        race = exact._start_race(c, budget, line, None)
        race.thread.join()
        assert isinstance(race.outcome, handoff.HandoffOutcome) and race.outcome.proven
        assert starts[-1] is None


def test_a_race_that_replaces_a_proven_one_keeps_its_proof() -> None:
    # The race on the whole MILP proves (here: its outcome says so) while the race that
    # replaced it on the open candidates waits for it: the proof is the budget's, not lost.
    from memaudit_fast.model.compiled import compile_package
    from memaudit_fast.solve import exact, handoff
    from memaudit_fast.solve.backends import MilpOutcome

    data = generate_package("base", seed=0)
    c = compile_package(data)
    budget = float(data["budgets"][-1])
    best = solve(c, budget, finish=None)
    store = tuple(c.candidate_ids.index(u) for u in best.selected)
    proof = handoff.HandoffOutcome(True, store, best.value, MilpOutcome("highs", "x", "interrupted", None, None, None, 0, 0.0),
                                   proved_by="root_lp")
    first = exact._Race(exact.HighsStop(), threading.Thread(), outcome=proof)
    first.stop.set()
    first.thread.start()
    line = _Line(0.06, True, tuple(range(c.num_candidates)))
    line.budget = budget
    second = exact._start_race(c, budget, line, None, 0.0, _core.BudgetStop(), first)
    second.thread.join()
    assert second.outcome is proof


def test_a_race_on_the_candidates_fixing_left_moves_to_those_the_root_leaves_too() -> None:
    import time

    from memaudit_fast.solve import exact

    started: list[Any] = []
    release = threading.Event()
    fixed_sets = [frozenset(range(50))]
    ran = [0.0]  # seconds HiGHS has run on the fixed candidates when the root is done

    def start(budget: float, line: Any, after: float, previous: Any = None) -> Any:
        race = exact._Race(exact.HighsStop(), threading.Thread(target=release.wait), reduced=True,
                           runs_at=time.monotonic() - ran[0])
        if previous is None:  # the first race: as fixing leaves it
            race.fixed_open, race.held = fixed_sets[0], ((1,), 5.0)
        else:
            assert previous.stop.is_set()
        race.thread.start()
        started.append(previous)
        return race

    def run(open_candidates: tuple[int, ...]) -> int:
        started.clear()
        races: dict[float, Any] = {}
        watch, _, _ = exact.handoff_watch(None, 1.0, 0.05, races, start, 100)
        for line in (_Line(0.05), _Line(0.2, True, open_candidates), _Line(0.3, True, open_candidates)):
            watch(line)
        return len(started) - 1  # moves

    try:
        share = exact.RACE_NARROW_SHARE
        inside = tuple(range(int(share * 50)))  # open under both: few enough
        assert run(inside + tuple(range(100, 160))) == 1  # the root's others are closed by fixing
        assert run(tuple(range(int(share * 50) + 1))) == 0  # too many open under both
        fixed_sets[0] = frozenset()
        assert run(inside) == 0  # fixing left nothing open: the race proved, nothing to move
        fixed_sets[0] = frozenset(range(50))
        ran[0] = exact.RACE_SWITCH_GRACE + 0.05
        assert run(inside) == 0  # HiGHS has run too long on them already
    finally:
        release.set()


def test_a_race_replacing_one_on_fixed_candidates_takes_those_open_under_both_and_the_held_store(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memaudit_fast.model.compiled import compile_package
    from memaudit_fast.solve import exact, handoff

    data = generate_package("base", seed=0)
    c = compile_package(data)
    budget = float(data["budgets"][-1])
    best = solve(c, budget, finish=None)
    held_store = tuple(sorted(c.candidate_ids.index(u) for u in best.selected))
    given: list[list[int]] = []
    real = handoff.finish_with_highs

    def recording(compiled: Any, b: float, candidates: Any, *args: Any, **kw: Any) -> Any:
        given.append(sorted(int(u) for u in candidates))
        return real(compiled, b, candidates, *args, **kw)

    monkeypatch.setattr(handoff, "finish_with_highs", recording)
    first = exact._Race(exact.HighsStop(), threading.Thread(), reduced=True, lp_bound=best.value + 1.0)
    first.fixed_open, first.held = frozenset(range(0, c.num_candidates, 2)), (held_store, best.value)
    first.stop.set()
    first.thread.start()
    line = _Line(0.06, True, tuple(range(c.num_candidates // 2)))
    line.budget = budget
    second = exact._start_race(c, budget, line, None, 0.0, _core.BudgetStop(), first)
    second.thread.join()
    assert given == [[u for u in range(c.num_candidates // 2) if u % 2 == 0]]
    # OPT is the held store's worth or HiGHS's optimum over those: the held store (OPT) stays.
    assert isinstance(second.outcome, handoff.HandoffOutcome) and second.outcome.proven
    assert float(c.objective(sorted(second.outcome.store))) == pytest.approx(best.value, abs=1e-9)


def test_a_sweep_keeps_every_proof_of_a_race_that_moved() -> None:
    # Entity timeline 1,000, budgets 300 and 700: at 700 the race on the whole MILP met the
    # root LP's bound and stopped the search just after the race had moved to the open
    # candidates; the budget then came back as time_limit (419.1, no limit set) in 5 of 8 runs.
    from oracles.timeline import timeline_package

    data = timeline_package(1000, seed=1)
    for _ in range(4):
        results = solve(data, budgets=[300.0, 700.0])
        assert [r.status for r in results] == ["optimal", "optimal"]
        assert results[1].value == pytest.approx(419.4, rel=1e-12)


def test_with_a_log_a_late_race_neither_delays_the_log_nor_starts_late(monkeypatch: pytest.MonkeyPatch) -> None:
    from memaudit_fast.solve import exact

    started: list[float] = []
    real_start = exact._start_race

    def start(compiled: Any, budget: float, line: Any, time_limit: Any, start_after: float = 0.0,
              budget_stop: Any = None, previous: Any = None) -> Any:
        started.append(float(line.seconds) + start_after)
        return real_start(compiled, budget, line, time_limit, start_after, budget_stop, previous)

    monkeypatch.setattr(exact, "_start_race", start)
    data = hard_package()
    (budget,) = data["budgets"]
    lines: list[Any] = []
    solve(data, budget=budget, finish="highs", handoff_after=0.6, time_limit=1.2, log=lines.append, log_interval=0.25)
    seconds = [float(line.seconds) for line in lines]
    assert seconds and seconds[0] < 0.35  # the log's own pace, not the hand-off's
    assert len(started) == 1 and 0.6 <= started[0] < 0.75


def test_limits_and_inputs_a_solve_cannot_take_are_usage_errors(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    data = generate_package("base", seed=0)
    with pytest.raises(UsageError, match="2\\^63"):
        solve(data, 8.0, node_limit=2**63)  # the core counts nodes in 64 bits: a TypeError before
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    assert main(["solve", str(path), "--node-limit", str(10**22)]) == 2
    assert "--node-limit" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["solve", str(tmp_path / "empty")]) == 2  # exit 0 with no output and no word before
    assert "no packages found" in capsys.readouterr().err


def test_ctrl_c_while_certifying_keeps_the_solves_and_ends_as_interrupted(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    # It printed HiGHS's note on stdout (inside --json), then exit 3, or went on to the next package.
    data = generate_package("base", seed=0)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    real = solve_cli.certify_results
    calls: list[int] = []

    def second_interrupted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(solve_cli, "certify_results", second_interrupted)
    assert main(["solve", str(path), str(path), "--json", "--certify", "highs"]) == 130
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]  # every line is JSON
    assert [r["certificate"]["status"] for r in records] == ["optimal"] + ["interrupted"] * 3  # budgets 2, 4, 8, 16
    assert all(r["status"] == "optimal" for r in records) and len(calls) == 2  # the second package: never


def test_a_package_without_budgets_fails_alone(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    # It ended the command with exit 2 ("nothing solved") after the packages before it were printed.
    good = generate_package("base", seed=0)
    bare = dict(generate_package("base", seed=1))
    bare.pop("budgets")
    paths = [tmp_path / "good.json", tmp_path / "bare.json"]
    for path, data in zip(paths, (good, bare)):
        path.write_text(json.dumps(data))
    assert main(["solve", str(paths[0]), str(paths[1]), "--json"]) == 3
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["status"] for r in records] == ["optimal"] * 4 + ["error"]
    assert "--budget" in records[-1]["error"]
    assert main(["solve", str(paths[1])]) == 2  # nothing solved at all


def test_the_long_solve_notice_comes_once_per_command(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    # It came once per package: two long packages, two notices (and two of 9 s each, none).
    paths = []
    for seed in (0, 1):
        paths.append(tmp_path / f"p{seed}.json")
        paths[-1].write_text(json.dumps(generate_package("base", seed=seed)))
    real = solve_cli.solve

    def with_a_log_line(*args: Any, **kwargs: Any) -> Any:
        results = real(*args, **kwargs)
        kwargs["log"](None)  # a progress line, as a long solve sends them
        return results

    monkeypatch.setattr(solve_cli, "solve", with_a_log_line)
    monkeypatch.setattr(solve_cli, "LONG_SOLVE_NOTICE", 0.0)
    assert main(["solve", str(paths[0]), str(paths[1]), "--json"]) == 0
    assert capsys.readouterr().err.count("still solving after") == 1


def test_arguments_of_the_wrong_kind_are_refused_up_front(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    data = generate_package("base", seed=0)
    with pytest.raises(UsageError, match="time_limit"):
        solve(data, 8.0, time_limit="1")  # type: ignore[arg-type]  # accepted before, as budget='8' was not
    with pytest.raises(UsageError, match="log"):
        solve(data, 8.0, log="print")  # type: ignore[arg-type]  # a TypeError a second into the solve before
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    assert main(["solve", str(path), "--budget-fracs", "1e308"]) == 2
    assert "--budget-fracs" in capsys.readouterr().err  # it said "budgets must be finite ..., got inf"


def test_the_long_solve_notice_comes_while_a_certificate_runs_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The notice came only from the search's progress lines: a MILP certifying for minutes
    # (no line at all) ran without it.
    from memaudit_fast.model.examples import example_package_path

    real = solve_cli.certify_results

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.6)  # as a long MILP does, without a progress line
        return real(*args, **kwargs)

    monkeypatch.setattr(solve_cli, "certify_results", slow)
    monkeypatch.setattr(solve_cli, "LONG_SOLVE_NOTICE", 0.3)
    assert main(["solve", str(example_package_path()), "--budget", "8", "--certify", "highs", "--json"]) == 0
    assert capsys.readouterr().err.count("still solving after") == 1
    # A command done before the notice is due leaves no timer behind to say it later.
    monkeypatch.setattr(solve_cli, "LONG_SOLVE_NOTICE", 1.0)
    assert main(["solve", str(example_package_path()), "--budget", "8", "--json"]) == 0
    time.sleep(1.3)
    assert "still solving after" not in capsys.readouterr().err
