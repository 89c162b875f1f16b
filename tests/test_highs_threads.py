"""HiGHS certificates from several threads at once take turns instead of colliding."""

from __future__ import annotations

import threading

from memaudit_fast.model.compiled import compile_package
from memaudit_fast.solve.backends import solve_highs
from memaudit_fast.solve.milp import build_milp
from memaudit_fast.suites.small import generate_package


def test_highs_solves_in_threads_all_finish() -> None:
    compiled = compile_package(generate_package("base", seed=0, scale=25))
    budget = float(round(0.2 * float(compiled.cost.sum())))
    model = build_milp(compiled, budget)
    expected = solve_highs(model).objective
    outcomes: list = []
    errors: list = []

    def work() -> None:
        try:
            outcomes.append(solve_highs(model))
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [o.status for o in outcomes] == ["optimal"] * 4
    assert all(abs(o.objective - expected) <= 1e-9 * max(1.0, abs(expected)) for o in outcomes)


def test_ctrl_c_stops_a_highs_solve_of_the_main_thread_and_is_raised() -> None:
    # highspy's own handling printed to stdout and kept the KeyboardInterrupt: commands went on.
    import os
    import signal
    import time

    import pytest

    from oracles.timeline import timeline_package

    compiled = compile_package(timeline_package(1000, seed=1))
    model = build_milp(compiled, float(round(0.1 * float(compiled.cost.sum()))), plain=True)  # HiGHS: 2-3 s
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        solve_highs(model, feasibility_tolerance=1e-6)
    assert time.monotonic() - started < 1.5
    assert solve_highs(build_milp(compiled, 50.0)).status == "optimal"  # HiGHS still works after it


def test_a_solve_waiting_for_the_turn_keeps_its_time_limit_and_its_stop() -> None:
    # Another thread's HiGHS holds the turn (as a long solve does): a time limit, or a stop,
    # of a solve waiting for it is kept, not counted from when the turn comes.
    import time

    from memaudit_fast.solve.backends import _HIGHS_ONE_AT_A_TIME, HighsStop, solve_lp_again

    compiled = compile_package(generate_package("base", seed=0, scale=5))
    model = build_milp(compiled, 8.0)
    assert _HIGHS_ONE_AT_A_TIME.acquire(timeout=10)
    try:
        started = time.monotonic()
        outcome = solve_highs(model, time_limit=0.2)
        assert outcome.status == "time_limit" and outcome.objective is None and outcome.bound is None
        assert 0.15 <= time.monotonic() - started < 1.0
        stop = HighsStop()
        threading.Timer(0.1, stop.set).start()
        started = time.monotonic()
        assert solve_highs(model, stop=stop).status == "interrupted"
        assert time.monotonic() - started < 1.0
        import highspy

        h = highspy.Highs()
        h.silent()
        started = time.monotonic()
        assert solve_lp_again(h, 0.1) is None
        assert time.monotonic() - started < 1.0
    finally:
        _HIGHS_ONE_AT_A_TIME.release()
    assert solve_highs(model, time_limit=30).status == "optimal"  # once the turn is free
