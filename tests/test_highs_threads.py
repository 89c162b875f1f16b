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
