"""HiGHS in a process of its own (solve/highs_process.py, solve/highs_server.py), the search's
share of its core while two HiGHS run (``BudgetStop.share``), and the race that runs HiGHS on
both models at once (solve/race.py: _lattice_beside)."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from memaudit_fast import _core
from memaudit_fast.model.compiled import compile_package
from memaudit_fast.model.package import Package
from memaudit_fast.solve import highs_process, race
from memaudit_fast.solve.backends import solve_highs
from memaudit_fast.solve.handoff import HandoffOutcome
from memaudit_fast.solve.milp import build_milp, on_unit_lattice
from memaudit_fast.solve.race_lattice import either as _either

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the server runs where processes can be started")


def _timeline(n: int, seed: int, fraction: float):
    from oracles.timeline import timeline_package

    compiled = compile_package(Package.from_dict(timeline_package(n, seed=seed)))
    return compiled, float(round(fraction * float(compiled.cost.sum())))


def _claimed(timeout: float = 60.0) -> highs_process._Server:
    highs_process.warm()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        server = highs_process.claim()
        if server is not None:
            return server
        time.sleep(0.01)
    raise AssertionError("no free server")


def _free_again() -> None:
    server = highs_process.claim()
    assert server is not None
    server.release()


def _lattice_case():
    compiled, budget = _timeline(300, 3, 0.1)
    lattice = on_unit_lattice(build_milp(compiled, budget, plain=True))
    alone = solve_highs(build_milp(compiled, budget), threads=1)
    assert alone.status == "optimal" and alone.objective is not None
    granularity = float(_core.objective_granularity(compiled.problem))
    return compiled, budget, lattice, float(alone.objective), granularity


def test_the_server_proves_what_highs_proves_here_and_hands_in_each_store():
    compiled, budget, lattice, opt, granularity = _lattice_case()
    stores: list[tuple[int, ...]] = []
    proofs: list[HandoffOutcome] = []
    hooks: list[str] = []
    solve = highs_process.HighsProcess(_claimed(), lattice, budget, granularity, on_store=stores.append,
                                       floor=lambda: -math.inf, on_proof=proofs.append,
                                       while_solving=(lambda: hooks.append("begin"), lambda: hooks.append("end")))
    solve.start_at(time.monotonic(), None)
    assert solve.thread is not None
    solve.thread.join(120)
    out = solve.outcome
    assert out is not None and out.proven and out.store is not None
    assert float(compiled.objective(sorted(out.store))) == pytest.approx(opt, rel=1e-9)
    assert proofs == [out] and hooks == ["begin", "end"]
    # Every store HiGHS found came back, each better than the last, the best one last.
    assert stores and tuple(stores[-1]) == tuple(out.store)
    worths = [float(compiled.objective(sorted(s))) for s in stores]
    assert worths == sorted(worths)
    _free_again()


def test_a_floor_at_opt_proves_it_once_the_bound_is_within_a_step():
    # The best store known here is worth OPT: the server's HiGHS ends as soon as its bound is
    # within a lattice step of it, proven with that worth as its bound, whatever its own store.
    _compiled, budget, lattice, opt, granularity = _lattice_case()
    assert granularity > 0
    solve = highs_process.HighsProcess(_claimed(), lattice, budget, granularity, on_store=lambda s: None,
                                       floor=lambda: opt, on_proof=lambda o: None)
    solve.start_at(time.monotonic(), None)
    assert solve.thread is not None
    solve.thread.join(120)
    assert solve.outcome is not None and solve.outcome.proven
    assert solve.outcome.upper_bound is not None and solve.outcome.upper_bound < opt + granularity


def test_a_solve_closed_before_it_is_due_asks_nothing_and_frees_the_server():
    _compiled, budget, lattice, _opt, granularity = _lattice_case()
    heard: list[object] = []
    solve = highs_process.HighsProcess(_claimed(), lattice, budget, granularity, on_store=heard.append,
                                       floor=lambda: -math.inf, on_proof=heard.append,
                                       while_solving=(lambda: heard.append("begin"), lambda: heard.append("end")))
    solve.start_at(time.monotonic() + 30.0, None)
    solve.close(wait=True)
    assert heard == [] and solve.outcome is None
    _free_again()


def test_a_solve_closed_while_it_runs_ends_its_share_at_once_and_frees_the_server_soon():
    compiled, budget = _timeline(700, 1, 0.1)  # HiGHS takes seconds on it
    lattice = on_unit_lattice(build_milp(compiled, budget, plain=True))
    granularity = float(_core.objective_granularity(compiled.problem))
    stop = _core.BudgetStop()
    proofs: list[HandoffOutcome] = []
    solve = highs_process.HighsProcess(_claimed(), lattice, budget, granularity, on_store=lambda s: None,
                                       floor=lambda: -math.inf, on_proof=proofs.append,
                                       while_solving=(lambda: stop.share(budget, 0.1), lambda: stop.share(budget, 1.0)))
    solve.start_at(time.monotonic(), None)
    deadline = time.monotonic() + 30
    while stop.share_of(budget) == 1.0 and time.monotonic() < deadline:
        time.sleep(0.005)
    assert stop.share_of(budget) == pytest.approx(0.1)
    time.sleep(0.2)
    solve.close()
    assert stop.share_of(budget) == 1.0  # lifted by close itself, not by the server's answer
    assert solve.thread is not None
    solve.thread.join(30)
    assert not solve.thread.is_alive() and proofs == []
    _free_again()


def test_the_server_dies_with_its_parent():
    if not sys.platform.startswith("linux"):
        pytest.skip("the parent-death signal is Linux's")
    script = textwrap.dedent("""
        import sys, time
        from memaudit_fast.solve import highs_process
        highs_process.warm()
        while not highs_process._SERVER:
            time.sleep(0.01)
        print(highs_process._SERVER[0].process.pid, flush=True)
        time.sleep(600)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        os.kill(pid, 0)  # running
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break  # dead, waiting for init to reap it
        except FileNotFoundError:
            break
        time.sleep(0.05)
    else:
        raise AssertionError(f"server {pid} outlived its parent")


def hard_package() -> dict:
    """About 2,400 candidates at 10% of the total cost: the root leaves a real gap."""
    from memaudit_fast.suites.small import generate_package

    data = generate_package("base", seed=0, scale=50)
    data["budgets"] = [round(0.1 * sum(c["cost"] for c in data["candidates"]))]
    return data


def test_a_share_keeps_the_results_of_the_search_and_names_only_its_budget():
    data = hard_package()
    (budget,) = data["budgets"]
    c = compile_package(data)
    reference = _core.solve(c.problem, [budget, 8.0], node_limit=300)
    stop = _core.BudgetStop()
    assert stop.share_of(budget) == 1.0
    stop.share(budget, 0.5)
    assert stop.share_of(budget) == 0.5 and stop.share_of(8.0) == 1.0
    shared = _core.solve(c.problem, [budget, 8.0], node_limit=300, budget_stop=stop)
    for a, b in zip(reference, shared):
        assert str(a.status) == str(b.status) and a.nodes == b.nodes
        assert a.value == b.value and a.upper_bound == b.upper_bound and list(a.selected) == list(b.selected)
    stop.share(budget, 1.0)
    assert stop.share_of(budget) == 1.0
    for silly in (0.0, -1.0, 2.0, math.nan):  # no share below 0 or above 1: lifted
        stop.share(budget, silly)
        assert stop.share_of(budget) == 1.0


def test_a_search_at_a_small_share_still_stops_at_once_when_named():
    data = hard_package()
    (budget,) = data["budgets"]
    c = compile_package(data)
    stop = _core.BudgetStop()
    stop.share(budget, 0.01)
    timer = threading.Timer(0.3, lambda: stop.stop(budget))
    timer.start()
    try:
        (result,) = _core.solve(c.problem, [budget], time_limit=60.0, budget_stop=stop)
    finally:
        timer.cancel()
    assert str(result.status) == "time_limit" and result.seconds < 5.0
    assert result.value == pytest.approx(c.objective(list(result.selected)), rel=1e-12)


def _outcome(proven: bool, bound: float | None, store=(0,)) -> HandoffOutcome:
    from memaudit_fast.solve.backends import MilpOutcome

    return HandoffOutcome(proven, store, bound, MilpOutcome("highs", "x", "optimal" if proven else "time_limit",
                                                             None, bound, store, 0, 0.0))


def test_either_takes_a_proof_of_either_model_and_else_the_tighter_bound():
    plain_proof, lattice_proof = _outcome(True, 5.0), _outcome(True, 5.0, (1,))
    assert _either(plain_proof, None) is plain_proof
    assert _either(plain_proof, _outcome(False, 4.0)) is plain_proof
    assert _either(_outcome(False, 9.0), lattice_proof) is lattice_proof
    merged = _either(_outcome(False, 9.0), _outcome(False, 7.0, (2,)))
    assert merged.upper_bound == 7.0 and merged.store == (0,) and not merged.proven
    loose = _outcome(False, 6.0)
    assert _either(loose, _outcome(False, 7.0)) is loose and _either(loose, None) is loose


@pytest.mark.parametrize("with_server", [True, False])
def test_the_race_on_both_models_proves_opt(monkeypatch: pytest.MonkeyPatch, with_server: bool) -> None:
    # The lattice model due at once beside the plain one (or after it, where no server is
    # free): the result agrees with HiGHS alone, whoever proves it.
    from memaudit_fast.solve import race_lattice
    from memaudit_fast.solve.exact import solve

    monkeypatch.setattr(race, "RACE_LATTICE_AFTER", 1e-4)
    beside: list[object] = []
    real = race_lattice.beside_plain

    def counted(*args, **kwargs):
        made = real(*args, **kwargs)
        if not kwargs.get("cutoff"):  # the lattice model's, not the open candidates'
            beside.append(made)
        return made

    monkeypatch.setattr(race, "beside_plain", counted)
    if with_server:
        _claimed().release()  # up and free before the race asks
    else:
        monkeypatch.setattr(highs_process, "claim", lambda: None)
    compiled, budget = _timeline(700, 1, 0.1)
    alone = solve_highs(build_milp(compiled, budget), threads=1)
    assert alone.status == "optimal" and alone.objective is not None
    for _ in range(3):  # until the race reaches HiGHS on the whole MILP (the search may prove first)
        result = solve(compiled, budget=budget, time_limit=60, handoff_after=0.0)
        assert result.status == "optimal" and result.value == pytest.approx(alone.objective, rel=1e-9)
        assert result.upper_bound == pytest.approx(alone.objective, rel=1e-9)
        index = compiled.index_of()
        assert float(compiled.objective(sorted(index[u] for u in result.selected))) == \
            pytest.approx(alone.objective, rel=1e-9)
        if beside:
            break
    assert beside, "the race never reached HiGHS on the whole MILP"
    # With a free server the lattice model ran beside the plain one; without, after it.
    assert all((b is not None) == with_server for b in beside)
    if with_server:
        _claimed(30.0).release()  # a stopped solve's server answers, and is free again


def test_the_race_on_the_open_candidates_adds_a_highs_that_prunes_by_the_best_store(monkeypatch) -> None:
    # An entity profile where fixing by the LP's reduced costs pays: HiGHS on the open
    # candidates is joined at once by a second one in the server that prunes by the best store
    # known; the result is OPT, whoever proves it.
    from memaudit_fast.solve import race_lattice
    from memaudit_fast.solve.exact import solve
    from oracles.packages import compiled_at_fraction
    from oracles.profile import profile_package

    compiled, budget = compiled_at_fraction(profile_package(1000, seed=0), 0.05)
    reference = solve(compiled, budget=budget, finish=None, time_limit=120)  # the branch-and-bound alone
    assert reference.proven_optimal
    monkeypatch.setattr(race, "RACE_CUTOFF_AFTER", 0.0)
    pruning: list[object] = []
    real = race_lattice.beside_plain

    def counted(*args, **kwargs):
        made = real(*args, **kwargs)
        if kwargs.get("cutoff"):
            pruning.append(made)
        return made

    monkeypatch.setattr(race, "beside_plain", counted)
    for _ in range(3):  # until a race reaches HiGHS on the open candidates with the server free
        _claimed().release()
        result = solve(compiled, budget=budget, time_limit=60)
        assert result.proven_optimal and result.value == pytest.approx(reference.value, abs=1e-9)
        assert result.upper_bound == pytest.approx(reference.value, abs=1e-9)
        if any(made is not None for made in pruning):
            break
    assert any(made is not None for made in pruning), "no race ran HiGHS with the cutoff beside"
    _claimed(30.0).release()
