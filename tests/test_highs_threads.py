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
