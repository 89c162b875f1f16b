"""The MILP solvers that certify an optimum: HiGHS (always) and Gurobi (when installed).

Both take a :class:`~memaudit_fast.solve.milp.MilpModel` and return a :class:`MilpOutcome`.
Gurobi's pip licence is size-limited: :class:`GurobiUnavailable` says why it was skipped.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import CertificationError
from .milp import MilpModel, highs_of, lattice_floor

#: Integrality and feasibility tolerance asked of both solvers: the certificate then rounds
#: x and re-evaluates every store exactly, so only the dual bound carries solver tolerance.
FEASIBILITY_TOLERANCE = 1e-9


@dataclass(frozen=True)
class MilpOutcome:
    """What one MILP solve reported."""

    solver: str
    version: str
    status: str  # optimal, time_limit, interrupted, infeasible or error
    objective: float | None  # the incumbent's objective, if any
    bound: float | None  # the proven (dual) bound
    store: tuple[int, ...] | None  # package candidate indices of the incumbent
    nodes: int
    seconds: float


class GurobiUnavailable(CertificationError):
    """Gurobi could not take this model (not installed, no licence, or over its size limit)."""


def _abs_gap(model: MilpModel) -> float:
    """A tiny absolute gap relative to the largest possible objective. Always finite: a ``y``
    column left unbounded (a linear h, spelt plainly) counts with the bound its rows imply, and
    one with none adds nothing (a smaller gap only asks more of the solver). An infinite gap
    let HiGHS call its first store optimal (MilpModel.implied_upper)."""
    if not model.num_cols:
        return 1e-9
    upper = model.implied_upper()
    reach = np.abs(model.objective) * np.where(np.isfinite(upper), np.abs(upper), 0.0)
    return 1e-9 * max(1.0, math.fsum(reach.tolist()))


def _store_from(model: MilpModel, col_value) -> tuple[int, ...]:
    return tuple(int(model.candidates[j]) for j in range(model.num_x) if col_value[j] > 0.5)


def empty_outcome(solver: str, version: str) -> MilpOutcome:
    """A model without columns (nothing worth storing) has optimum 0; no solver is run."""
    return MilpOutcome(solver, version, "optimal", 0.0, 0.0, (), 0, 0.0)


def highs_version() -> str:
    import highspy

    return ".".join(str(v) for v in (highspy.HIGHS_VERSION_MAJOR, highspy.HIGHS_VERSION_MINOR, highspy.HIGHS_VERSION_PATCH))


class HighsStop:
    """A flag another thread sets to stop a HiGHS solve (its status is then ``interrupted``)."""

    def __init__(self, parent: HighsStop | None = None) -> None:
        self._event = threading.Event()
        self._parent = parent  # a stop of the parent's stops this one too (not the other way)
        #: HiGHS's proven bound on the MILP (maximisation) at its latest MIP callback, inf before.
        self.mip_bound = math.inf

    def set(self) -> None:
        self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set() or (self._parent is not None and self._parent.is_set())

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the flag; True when it is set."""
        return self._event.wait(timeout)

    def watch(self, h: Any) -> None:
        # HiGHS asks its interrupt callbacks regularly in every phase; they answer from the flag,
        # which (unlike Highs.cancelSolve) also holds when set before the solve begins.
        def answer(event: Any) -> None:
            if self.is_set():
                event.interrupt()

        def answer_mip(event: Any) -> None:
            bound = float(event.data_out.mip_dual_bound)
            if math.isfinite(bound):
                self.mip_bound = bound
            answer(event)

        h.cbSimplexInterrupt += answer
        h.cbIpmInterrupt += answer
        h.cbMipInterrupt += answer_mip


def limit_next_solve(h: Any, seconds: float) -> None:
    """Let the next solve of the HiGHS object ``h`` run ``seconds`` more (at least 1 ms). Its
    ``time_limit`` counts the object's run time over all its solves so far, not the next one's:
    a limit of what is left alone stops a re-solve at once once the earlier solves took that
    long (the root LP's cut rounds were cut off after their first LP that way)."""
    h.setOptionValue("time_limit", float(h.getRunTime()) + max(0.001, float(seconds)))


def solve_lp_again(h: Any, seconds: float) -> Any | None:
    """Solve the LP held by the HiGHS object ``h`` (warm, from its last basis) in ``seconds`` at
    most, one HiGHS solve in the process at a time: its solution, or None when HiGHS does not
    end at an optimum. The root LP's rounds, its reduced costs and the LP branching share it."""
    import highspy

    started = time.monotonic()
    if not _take_turn(None, started + seconds):
        return None  # another solve's HiGHS held the turn all that time
    try:
        limit_next_solve(h, seconds - (time.monotonic() - started))
        h.run()
    finally:
        _HIGHS_ONE_AT_A_TIME.release()
    if h.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return None
    return h.getSolution()


#: Seconds between two readings of a solve's ``floor`` (solve_highs): HiGHS asks its interrupt
#: callback many times a second, and the race's floor reads the search's store.
FLOOR_EVERY = 0.005


# HiGHS solves of one process take turns: each holds a core, and the race's root LP beside its
# HiGHS (a third busy thread on two cores) doubled the LP's time and lost the cases it proves.
_HIGHS_ONE_AT_A_TIME = threading.Lock()


def _take_turn(stop: HighsStop | None, deadline: float | None) -> bool:
    """Wait for the HiGHS turn (True: taken; the caller releases it) while ``stop`` is not set
    and ``deadline`` (time.monotonic) has not passed (False). A solve in another thread holds
    the turn for as long as its HiGHS runs: a time limit or a cancel must not wait for it."""
    while True:
        if stop is not None and stop.is_set():
            return False
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return False
        if _HIGHS_ONE_AT_A_TIME.acquire(timeout=0.02 if left is None else min(0.02, left)):
            return True


def solve_highs(
    model: MilpModel, *, time_limit: float | None = None, start_store: Sequence[int] | None = None,
    feasibility_tolerance: float = FEASIBILITY_TOLERANCE, threads: int | None = None,
    stop: HighsStop | None = None, on_store: Callable[[tuple[int, ...]], None] | None = None,
    short_of: float | None = None, floor: Callable[[], float] | None = None, cutoff: float | None = None,
    granularity: float = 0.0,
) -> MilpOutcome:
    """Solve with HiGHS (``highspy``), to ``mip_rel_gap = 0`` and a tiny absolute gap.

    ``start_store`` (package candidate indices of a feasible store) is handed to HiGHS as its first
    incumbent; candidates without a column are left out of it. ``feasibility_tolerance``
    below HiGHS's default 1e-6 slows it down (about 3x on 2,000 candidates) for a certificate
    that rounds x anyway; ``threads`` caps its worker threads. ``on_store`` hears every store
    HiGHS finds that improves on its last (package candidate indices), as it finds it.
    ``short_of``: the caller knows that no store is worth less than this more than a feasible
    one (a lattice, see handoff.lattice_gap); HiGHS is stopped, its store proven optimal, once
    its bound is less than that above its store. A stop, not HiGHS's ``mip_abs_gap``: with
    that gap its path changed, and an entity timeline of 1,000 candidates at 10% took 12.7 s
    (11,673 nodes) against 7.1 s (6,359 nodes). ``floor`` (with ``short_of``): the worth of
    the best store known elsewhere, read every FLOOR_EVERY seconds; a bound within
    ``short_of`` of it proves that store optimal, and the outcome is then ``optimal`` with that
    worth as its bound, whatever HiGHS's own store (which may be worse, or none). With the
    lattice's ``granularity`` (OPT a multiple of it, a store off it never optimal: the lattice
    is the reduced problem's, and a store of candidates the reduction dropped may lie between
    two points), the best store's worth is brought down to its lattice point before the
    comparison: a bound less than a step above that point proves OPT is at most it.
    ``cutoff`` (with ``floor``): HiGHS prunes from the start every node whose bound is at most
    the floor's worth then plus ``cutoff`` (its ``objective_bound``), as if it held a store
    worth that much; the caller knows no store lies between (half a lattice step). HiGHS then
    ends ``optimal`` with whatever store it has, or none: no store is worth more than that
    limit, so the floor's store is optimal, and the outcome says so with its worth as the bound.
    """

    import highspy

    version = highs_version()
    if model.num_cols == 0:
        return empty_outcome("highs", version)

    start = time.perf_counter()
    h = highs_of(model)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", _abs_gap(model))
    h.setOptionValue("mip_feasibility_tolerance", float(feasibility_tolerance))
    h.setOptionValue("primal_feasibility_tolerance", float(feasibility_tolerance))
    if threads is not None:
        h.setOptionValue("threads", int(threads))
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    def to_lattice(worth: float) -> float:
        return lattice_floor(worth, granularity) if granularity > 0 and math.isfinite(worth) else worth

    limit = None  # the worth under which HiGHS prunes every node (cutoff), once set
    if cutoff is not None and floor is not None:
        floor_then = to_lattice(floor())
        if math.isfinite(floor_then):
            limit = floor_then + cutoff
            # HiGHS takes the option in its own, minimising, sense of the objective.
            h.setOptionValue("objective_bound", -limit)
    if start_store is not None and model.num_x:
        # Every x column set: x = 1 on the store, 0 elsewhere; HiGHS completes the y columns.
        chosen = {int(u) for u in start_store}
        x = np.array([1.0 if int(u) in chosen else 0.0 for u in model.candidates])
        h.setSolution(model.num_x, np.arange(model.num_x, dtype=np.int32), x)
    # Not highspy's Ctrl-C handling: it prints to stdout (inside a --json stream) and keeps
    # the KeyboardInterrupt to itself, so a command went on to its next package (see
    # _run_stoppable).
    h.HandleKeyboardInterrupt = False
    main = threading.current_thread() is threading.main_thread()
    if stop is None and main:
        stop = HighsStop()
    if stop is not None:
        stop.watch(h)
    if on_store is not None:
        def improving(event: Any) -> None:
            on_store(_store_from(model, event.data_out.mip_solution))

        h.cbMipImprovingSolution.subscribe(improving)
    closed: list[float | None] = [None]  # the worth HiGHS's bound came within short_of of
    if short_of is not None:
        known = [-math.inf, -math.inf]  # the floor's last value, and when to read it again

        def close_enough(event: Any) -> None:
            out = event.data_out
            best = float(out.mip_primal_bound)  # -inf before HiGHS's first store
            if limit is not None and best <= limit:
                best = -math.inf  # the limit itself, while HiGHS holds no store worth more
            if floor is not None:
                now = time.monotonic()
                if now >= known[1]:
                    known[0], known[1] = floor(), now + FLOOR_EVERY
                best = max(best, known[0])
            best = to_lattice(best)
            if float(out.mip_dual_bound) - best < short_of:
                closed[0] = best
                event.interrupt()

        h.cbMipInterrupt += close_enough
    deadline = None if time_limit is None else time.monotonic() - (time.perf_counter() - start) + float(time_limit)
    if not _take_turn(stop, deadline):
        waited = "interrupted" if stop is not None and stop.is_set() else "time_limit"
        return MilpOutcome("highs", version, waited, None, None, None, 0, time.perf_counter() - start)
    try:
        if time_limit is not None:  # what is left of it after the wait for the turn
            h.setOptionValue("time_limit", max(0.001, float(time_limit) - (time.perf_counter() - start)))
        if main and stop is not None:
            _run_stoppable(h, stop)
        else:
            h.run()
    finally:
        _HIGHS_ONE_AT_A_TIME.release()
    seconds = time.perf_counter() - start

    s = highspy.HighsModelStatus
    raw = h.getModelStatus()
    status = {
        s.kOptimal: "optimal", s.kTimeLimit: "time_limit", s.kInterrupt: "interrupted",
        s.kInfeasible: "infeasible",
    }.get(raw, "error")
    info = h.getInfo()
    has_solution = info.primal_solution_status == highspy.SolutionStatus.kSolutionStatusFeasible
    objective = float(info.objective_function_value) if has_solution else None
    bound: float | None = float(info.mip_dual_bound)
    if bound is not None and not math.isfinite(bound):
        bound = None
    if limit is not None and cutoff is not None and floor is not None:
        if status in ("optimal", "infeasible") and (objective is None or objective <= limit):
            # Every node HiGHS did not prune is done, and none holds a store worth more than
            # the limit: the floor's store (worth limit - cutoff) is optimal. HiGHS's own
            # bound may lie under it, since the limit pruned those nodes.
            closed[0], status = max(limit - cutoff, to_lattice(floor())), "interrupted"
        elif bound is not None:
            bound = max(bound, limit)  # the pruned nodes are bounded by the limit only
    if closed[0] is not None and status == "interrupted":
        # No store lies between the bound and the best store known: that store is optimal.
        status, bound = "optimal", closed[0] if objective is None else max(closed[0], objective)
    if status == "optimal" and objective is not None and bound is not None:
        bound = max(bound, objective)
    if status == "optimal" and bound is not None and floor is not None and closed[0] is not None:
        # The floor's store is worth what it is, on the lattice or off it (a store of candidates
        # the reduction dropped may lie between two points): a bound is never under it.
        bound = max(bound, float(floor()))
    store = _store_from(model, h.getSolution().col_value) if has_solution else None
    return MilpOutcome("highs", version, status, objective, bound, store, int(info.mip_node_count), seconds)


def _run_stoppable(h: Any, stop: HighsStop) -> None:
    """``h.run()`` in a thread while the main thread waits: Ctrl-C (or a SIGTERM turned into
    one) stops HiGHS at its next check and is raised again once it has returned, with the
    solver's state intact; a second one while it stops is not let through."""
    done = threading.Event()

    def work() -> None:
        try:
            h.run()
        finally:
            done.set()

    threading.Thread(target=work, name="memaudit-highs", daemon=True).start()
    try:
        while not done.wait(0.1):
            pass
    except KeyboardInterrupt:
        stop.set()
        while not done.is_set():
            try:
                done.wait(0.1)
            except KeyboardInterrupt:
                pass
        raise


def _gurobi():
    try:
        import gurobipy
    except ImportError:
        raise GurobiUnavailable("gurobipy is not installed (pip install 'memaudit_fast[gurobi]')") from None
    return gurobipy


class GurobiSession:
    """One Gurobi environment, started on first use and shared by the solves that use it.

    It also remembers the size (columns, rows) of a model the licence refused: any model at
    least as large in both is refused too, so it goes straight to HiGHS without building a
    Gurobi model first. A lock guards both, since the threads backend certifies in parallel.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._env: Any = None
        self.refused: tuple[int, int] | None = None

    def env(self, gp: Any) -> Any:
        with self._lock:
            if self._env is None:
                env = gp.Env(empty=True)
                env.setParam("OutputFlag", 0)
                try:
                    env.start()
                except gp.GurobiError as exc:
                    raise GurobiUnavailable(f"no usable Gurobi licence (GurobiError {exc.errno}: {exc})") from None
                self._env = env
            return self._env

    def is_refused(self, size: tuple[int, int]) -> bool:
        with self._lock:
            return self.refused is not None and size[0] >= self.refused[0] and size[1] >= self.refused[1]

    def refuse(self, size: tuple[int, int]) -> None:
        with self._lock:
            if self.refused is None or (size[0] <= self.refused[0] and size[1] <= self.refused[1]):
                self.refused = size


def gurobi_installed() -> bool:
    """Whether gurobipy can be imported (a licence may still refuse a model)."""
    try:
        _gurobi()
    except GurobiUnavailable:
        return False
    return True


def gurobi_version() -> str:
    gp = _gurobi()
    return ".".join(str(v) for v in gp.gurobi.version())


def solve_gurobi(model: MilpModel, session: GurobiSession, *, time_limit: float | None = None) -> MilpOutcome:
    """Solve with Gurobi (``gurobipy``), to ``MIPGap = 0`` and a tiny absolute gap.

    Raises
    ------
    GurobiUnavailable
        When gurobipy is missing, has no licence, or the licence refuses the model's size
        (the pip licence stops at 2,000 variables or 2,000 constraints: GurobiError 10010).
    """
    gp = _gurobi()
    version = gurobi_version()
    if model.num_cols == 0:
        return empty_outcome("gurobi", version)
    size = (model.num_cols, model.num_rows)
    too_large = (
        f"the model has {size[0]} variables and {size[1]} constraints, beyond the size-limited "
        "Gurobi licence (GurobiError 10010)"
    )
    if session.is_refused(size):
        raise GurobiUnavailable(too_large)
    start = time.perf_counter()
    env = session.env(gp)
    grb = gp.GRB
    m = gp.Model(env=env)
    try:
        m.Params.MIPGap = 0.0
        m.Params.MIPGapAbs = _abs_gap(model)
        m.Params.FeasibilityTol = FEASIBILITY_TOLERANCE
        m.Params.IntFeasTol = FEASIBILITY_TOLERANCE
        m.Params.Threads = 1
        if time_limit is not None:
            m.Params.TimeLimit = float(time_limit)
        n = model.num_cols
        vtype = [grb.BINARY] * model.num_x + [grb.CONTINUOUS] * (n - model.num_x)
        if model.integral_y is not None:
            for k in np.flatnonzero(model.integral_y).tolist():
                vtype[model.num_x + k] = grb.INTEGER
        cols = m.addVars(n, lb=model.col_lower.tolist(), ub=model.col_upper.tolist(),
                         obj=model.objective.tolist(), vtype=vtype)
        m.ModelSense = grb.MAXIMIZE
        for k in range(model.num_rows):
            lo, hi = int(model.row_starts[k]), int(model.row_starts[k + 1])
            expr = gp.LinExpr(model.row_value[lo:hi].tolist(), [cols[int(j)] for j in model.row_index[lo:hi]])
            # Every row of the model is a <= row (lower bounds are -inf).
            m.addLConstr(expr, grb.LESS_EQUAL, float(model.row_upper[k]))
        try:
            m.optimize()
        except gp.GurobiError as exc:
            if exc.errno == 10010:
                session.refuse(size)
                raise GurobiUnavailable(too_large) from None
            raise GurobiUnavailable(f"Gurobi failed (GurobiError {exc.errno}: {exc})") from None
        seconds = time.perf_counter() - start
        status = {
            grb.OPTIMAL: "optimal", grb.TIME_LIMIT: "time_limit", grb.INTERRUPTED: "interrupted",
            grb.INFEASIBLE: "infeasible",
        }.get(m.Status, "error")
        has_solution = m.SolCount > 0
        objective = float(m.ObjVal) if has_solution else None
        bound = float(m.ObjBound) if status in ("optimal", "time_limit", "interrupted") else None
        if bound is not None and not math.isfinite(bound):
            bound = None
        if status == "optimal" and objective is not None and bound is not None:
            bound = max(bound, objective)
        store = _store_from(model, [cols[j].X for j in range(model.num_x)]) if has_solution else None
        return MilpOutcome("gurobi", version, status, objective, bound, store, int(m.NodeCount), seconds)
    finally:
        m.dispose()
