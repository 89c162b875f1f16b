"""Exact ``OPT(B)`` of a package: the Python face of the C++ branch-and-bound.

For a budget B the solver maximises

.. math::

    F(X) = \\sum_r w_r\\, h_r\\Big(\\sum_{u \\in X} a_{ur}\\Big)
    \\quad\\text{s.t.}\\quad \\sum_{u \\in X} c_u \\le B,\\quad |X \\cap G| \\le 1 \\text{ for every group } G,

with the node bound ``F(S)`` + a Lagrangian relaxation of the saturation caps + the LP
relaxation of a multiple-choice knapsack (see ``cpp/include/memaudit/bounds.hpp``).

Guarantees
----------
* ``status == "optimal"``: the search completed and
  ``value >= OPT(B) - 1e-9 * max(1, |value|)`` (``value == OPT(B)`` when F is known to take
  values on a lattice, e.g. rational weights and coverage with cap1/linear/PWL saturation).
* Any other status (``time_limit``, ``node_limit``, ``interrupted``): ``value`` is the best
  store found and ``upper_bound >= OPT(B)`` is proven; ``gap = (upper_bound - value) /
  upper_bound``.
* ``value`` is F of ``selected`` evaluated from scratch; the store is feasible
  (``cost <= B + 1e-12 * max(1, B)``, at most one candidate per group).

Ctrl-C during a solve, or :meth:`CancelToken.cancel` from another thread, stops the search
and returns the anytime result with status ``interrupted``. The GIL is released while the
search runs, so several packages may be solved from several threads at once; Ctrl-C then stops
the solves of every thread too (Python delivers the signal to the main thread only, so this
module wraps Python's default SIGINT handler, when it is the one installed, with one that first
cancels the running solves of other threads and then raises KeyboardInterrupt as before).
"""

from __future__ import annotations

import math
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any, overload

import numpy as np

from .. import _core
from ..errors import UsageError
from ..model.compiled import check_budget, check_budgets
from .backends import HighsStop
from .handoff import HandoffOutcome

__all__ = ["DEFAULT_FINISH", "FINISHERS", "RESULT_FORMAT", "STATUSES", "CancelToken", "SolveProgress", "SolveResult", "format_progress", "solve"]

#: The format of result records (re-exported by ``results.records``, which reads and writes them).
RESULT_FORMAT = "memaudit.result/1"

#: Every status a result can carry (``error`` is used only by batch records).
STATUSES = ("optimal", "time_limit", "node_limit", "interrupted")

#: A flag another thread may set to stop every solve that watches it.
CancelToken = _core.CancelToken

#: One line of the solver log: ``budget, nodes, incumbent, upper_bound, gap, seconds,
#: root_done`` (``upper_bound`` is proven at that moment).
SolveProgress = _core.SolveProgress

#: Engines that may finish a proof the branch-and-bound leaves open (see ``solve(finish=)``).
FINISHERS = ("highs",)

#: ``solve``'s default: the HiGHS race, unless a node limit is set (a node-limited search is
#: asked for the branch-and-bound's own nodes).
DEFAULT_FINISH = "auto"

#: Seconds of branch-and-bound per budget before ``finish`` starts beside the search: early,
#: since HiGHS proves many large-budget packages in a fraction of a second, and on the
#: machine's other core, so that a search about to finish loses nothing to it. Over the
#: bench's 70 large-budget cases 0.02 s took the slowest from 1.42x HiGHS's time alone to
#: 1.08-1.11x (two runs; MEMAUDIT-Small x25 @ 20%), the median unchanged, against 0.05 s.
DEFAULT_HANDOFF_AFTER = 0.02


#: Seconds before the first progress line of a budget, at the least, in a solve with ``finish``.
RACE_FIRST = 0.001

#: Seconds between two progress lines of a solve with ``finish`` and no log (the race does
#: not need them).
RACE_QUIET = 3600.0

#: Seconds between two progress lines, at the most, of a solve with ``finish`` and a log.
RACE_LOGGED = 0.1

#: A race on the whole MILP moves to the root's open candidates when they are at most this
#: share of all: MEMAUDIT-like 3,000 @ 2% leaves 13% open, and HiGHS proves the smaller model
#: in 0.23 s against 2.0 s for the whole one; MEMAUDIT-Small x25 @ 20% leaves 57% open, and
#: there a restart (0.50 s) costs more than HiGHS's remaining time on the whole model.
RACE_RESTART_SHARE = 0.25

#: Seconds before ``handoff_after`` at which the race starts building its model (3-10 ms on
#: 1,000-3,000 candidates); solves done sooner never reach Python.
RACE_PREPARE = 0.01

#: A race on the whole MILP whose HiGHS has run at most this long when the root is done moves
#: to the open candidates whatever their share: it loses next to nothing, and HiGHS proves
#: the smaller model several times faster (entity timeline 1,000 @ 15%, root done at 0.04 s
#: with 35% open: 0.21-0.48 s against 0.85 s on the whole MILP).
RACE_SWITCH_GRACE = 0.02

#: A race on the whole MILP whose HiGHS has run longer than this when the root is done stays
#: there, however few candidates are open: by then HiGHS has done its own root (cuts,
#: heuristics), which a restart would throw away. MEMAUDIT-like 3,000 @ 2% moves at 0.23 s and
#: gains (0.56 s against 2.2 s for HiGHS alone); the root of a dialogue of 3,003 candidates at
#: 5% is done at 1.2-1.3 s with 25% open, and there the move took 2.2-2.4 s against 1.6 s.
RACE_MOVE_LATEST = 0.5


def format_progress(line: Any) -> str:
    """A solver-log line, MIP style: budget, nodes, incumbent, bound, gap, elapsed."""
    bound = f"{line.upper_bound:.10g}" if math.isfinite(line.upper_bound) else "inf"
    phase = "" if line.root_done else "  (root)"
    return (f"B={line.budget:<10.6g} nodes {line.nodes:>10}  incumbent {line.incumbent:<14.10g} "
            f"bound {bound:<14} gap {100 * line.gap:7.4f}%  {line.seconds:7.1f}s{phase}")

def _plain_number(x: float) -> float | int:
    """Integral floats as ints, so records read ``"budget": 8`` rather than ``8.0``."""
    return int(x) if float(x).is_integer() and abs(x) < 2**53 else float(x)


@dataclass(frozen=True)
class SolveResult:
    """The outcome of one (package, budget).

    Attributes
    ----------
    package_id, budget, saturation, weights_rule
        What was solved (``weights_rule`` is ``explicit`` or ``query_demand``).
    status
        One of :data:`STATUSES`.
    proven_optimal
        ``status == "optimal"``.
    value
        ``F(selected)``: OPT(B) when proven optimal, else the incumbent.
    upper_bound
        A proven upper bound on OPT(B) (equal to ``value`` up to the tolerance when optimal).
    gap
        ``(upper_bound - value) / upper_bound`` (0 when ``upper_bound`` is 0).
    selected
        Candidate ids of the store, in package order.
    cost
        Total cost of ``selected``.
    nodes, seconds
        Search nodes and wall time of this budget (the first budget of a sweep also carries
        the shared preprocessing).
    proved_by
        The engine that completed the proof: ``"branch_and_bound"``, or ``"highs"`` when
        HiGHS, racing the branch-and-bound (``solve(finish=)``), proved it first;
        None when the result is not proven.
    """

    package_id: str
    budget: float
    saturation: str
    weights_rule: str
    status: str
    proven_optimal: bool
    value: float
    upper_bound: float
    gap: float
    selected: tuple[str, ...]
    cost: float
    nodes: int
    seconds: float
    proved_by: str | None = None
    group_capacity: int = 1  # candidates a group could hold (objective.group_capacity)

    def to_record(self) -> dict[str, Any]:
        """The ``memaudit.result/1`` record (``opt`` is ``value``)."""
        return {
            "format": RESULT_FORMAT,
            "package_id": self.package_id,
            "budget": _plain_number(self.budget),
            "saturation": self.saturation,
            "weights_rule": self.weights_rule,
            "opt": self.value,
            "upper_bound": self.upper_bound,
            "gap": self.gap,
            "status": self.status,
            "proven_optimal": self.proven_optimal,
            "selected": list(self.selected),
            "cost": _plain_number(self.cost),
            "nodes": self.nodes,
            "seconds": self.seconds,
            "proved_by": self.proved_by,
        } | ({"group_capacity": self.group_capacity} if self.group_capacity != 1 else {})


def _budget_list(budget: Any, budgets: Any, own: Sequence[float], package_id: str) -> tuple[list[float], bool]:
    """The budgets to solve and whether the caller asked for a single result."""
    if budget is not None and budgets is not None:
        raise UsageError("pass either budget or budgets, not both")
    if budgets is not None:
        return check_budgets(budgets, "budgets"), False
    if budget is None:
        if not own:
            raise UsageError(
                f"package {package_id!r} has no budgets of its own; pass budget=B (CLI: --budget B)"
            )
        return check_budgets(own, "package budget"), False
    if isinstance(budget, (list, tuple, np.ndarray)) and not (isinstance(budget, np.ndarray) and budget.ndim == 0):
        return check_budgets(budget, "budget"), False
    return [check_budget(budget, "budget")], True


@overload
def solve(
    package: Any,
    budget: float,
    *,
    budgets: None = None,
    time_limit: float | None = None,
    node_limit: int | None = None,
    cancel: Any = None,
    log: Callable[[Any], None] | None = None,
    log_interval: float = 1.0,
    finish: str | None = DEFAULT_FINISH,
    handoff_after: float = DEFAULT_HANDOFF_AFTER,
) -> SolveResult: ...


@overload
def solve(
    package: Any,
    budget: None = None,
    *,
    budgets: Sequence[float] | None = None,
    time_limit: float | None = None,
    node_limit: int | None = None,
    cancel: Any = None,
    log: Callable[[Any], None] | None = None,
    log_interval: float = 1.0,
    finish: str | None = DEFAULT_FINISH,
    handoff_after: float = DEFAULT_HANDOFF_AFTER,
) -> list[SolveResult]: ...


def solve(
    package: Any,
    budget: Any = None,
    *,
    budgets: Any = None,
    time_limit: float | None = None,
    node_limit: int | None = None,
    cancel: Any = None,
    log: Callable[[Any], None] | None = None,
    log_interval: float = 1.0,
    finish: str | None = DEFAULT_FINISH,
    handoff_after: float = DEFAULT_HANDOFF_AFTER,
) -> SolveResult | list[SolveResult]:
    """Solve a package exactly for one budget or a sweep of budgets.

    Parameters
    ----------
    package
        A :class:`~memaudit_fast.model.package.Package`, a ``CompiledPackage``, a package dict, or
        a path to a package file.
    budget
        One budget B: returns one :class:`SolveResult`. When neither ``budget`` nor
        ``budgets`` is given the package's own budgets are solved and a list is returned.
    budgets
        Several budgets solved in one call (shared preprocessing, each optimum warm-starts
        the next larger budget): returns a list in the same order.
    time_limit
        Seconds per budget; the result then has status ``time_limit`` if the proof is not
        complete.
    node_limit
        Search nodes per budget (status ``node_limit``).
    cancel
        A :class:`CancelToken`; ``token.cancel()`` from any thread stops the search.
    log
        Called about every ``log_interval`` seconds during the search with a
        :data:`SolveProgress` (nodes, incumbent, proven bound, gap, elapsed seconds);
        :func:`format_progress` turns one into a log line. An exception it raises stops the
        solve and propagates.
    finish
        ``"highs"``: a budget the branch-and-bound has not proven after ``handoff_after``
        seconds starts HiGHS in a second thread, from no start store, on the candidates the
        root left open (on all of them while the root is still running); the search goes on
        beside it and the first proof wins. ``proved_by`` says which engine proved it. The
        time limit, if any, covers both; at the limit the result keeps the better store and
        the smaller bound of the two. Packages with log1p saturation are never handed off
        (their MILP is an approximation). ``"auto"`` (the default): ``"highs"``, unless
        ``node_limit`` is set. ``None``: the branch-and-bound alone, which also returns the same
        store on every run (with the race, a store of the same value may come from HiGHS).

    Raises
    ------
    UsageError
        Bad budgets or limits, or no budget at all for a package without budgets.
    PackageError
        The package does not validate.
    """
    from ..model.compiled import compile_package

    compiled = compile_package(package)
    if compiled.group_capacity > 1:  # an exact reduction to one per group (solve/capacity.py)
        from .capacity import solve_with_group_capacity

        return solve_with_group_capacity(  # type: ignore[no-any-return]
            solve, compiled, budget, budgets, time_limit=time_limit, node_limit=node_limit, cancel=cancel,
            log=log, log_interval=log_interval, finish=finish, handoff_after=handoff_after)
    todo, single = _budget_list(budget, budgets, compiled.budgets, compiled.package_id)
    if time_limit is not None and (isinstance(time_limit, bool) or not float(time_limit) >= 0):
        raise UsageError(f"time_limit must be >= 0 seconds, got {time_limit!r}")
    if node_limit is not None and (isinstance(node_limit, bool) or int(node_limit) != node_limit or node_limit < 0):
        raise UsageError(f"node_limit must be a non-negative integer, got {node_limit!r}")
    if finish == "auto":
        finish = None if node_limit is not None else "highs"
    if finish is not None and finish not in FINISHERS:
        raise UsageError(f"finish must be 'auto', one of {FINISHERS} or None, got {finish!r}")
    if not (log_interval > 0):
        raise UsageError(f"log_interval must be > 0 seconds, got {log_interval!r}")
    limit = None if time_limit is None or time_limit == math.inf else float(time_limit)
    progress: Callable[[Any], Any] | None = log
    interval, first = float(log_interval), 0.0
    races: dict[float, _Race] = {}  # HiGHS beside the search, one budget at a time
    budget_stop = None
    if finish is not None:
        if not (handoff_after >= 0):
            raise UsageError(f"handoff_after must be >= 0 seconds, got {handoff_after!r}")
        budget_stop = _core.BudgetStop()
        stopper = budget_stop
        progress, interval, first = _handoff_watch(
            log, float(log_interval), float(handoff_after), races,
            lambda b, line, after, previous=None: _start_race(compiled, b, line, limit, after, stopper, previous),
            compiled.num_candidates)
    raw = solve_core(compiled.problem, todo, limit, None if node_limit is None else int(node_limit), cancel,
                     progress, interval, first, budget_stop)
    ids = compiled.candidate_ids
    results = [
        SolveResult(
            package_id=compiled.package_id,
            budget=float(r.budget),
            saturation=compiled.saturation_name,
            weights_rule=compiled.weights_rule,
            status=str(r.status),
            proven_optimal=bool(r.proven_optimal),
            value=float(r.value),
            upper_bound=float(r.upper_bound),
            gap=float(r.gap),
            selected=tuple([ids[i] for i in _index_list(r.selected)]),
            cost=float(r.cost),
            nodes=int(r.nodes),
            seconds=float(r.seconds),
            proved_by=_proved_by(r),
        )
        for r in raw
    ]
    if finish is not None:
        try:
            for running in races.values():
                running.stop.set()  # a race still running lost (or the caller's limit came first)
            for k, r in enumerate(raw):
                race = races.get(float(r.budget))
                if race is None or r.status == "optimal":
                    continue
                race.thread.join()
                # Stopped by a won race, or by the caller's limit: either way what HiGHS found
                # and proved (a store, a bound) is as valid as the search's own.
                if isinstance(race.outcome, HandoffOutcome):
                    results[k] = _merge(compiled, results[k], race.outcome, results[k].seconds)
        finally:
            # A race the search made useless ends on its own once it sees the flag (HiGHS asks
            # for it in every phase): the caller does not wait for it.
            for race in races.values():
                race.stop.set()
    return results[0] if single else results


# Tokens of the solves running in threads other than the main one: Ctrl-C cancels them all.
_RUNNING: set[Any] = set()
_RUNNING_LOCK = threading.Lock()


def _index_list(selected: Any) -> list[int]:
    """The core's selected indices as Python ints (one C call for a numpy array)."""
    return selected.tolist() if hasattr(selected, "tolist") else list(selected)


def solve_core(problem: Any, budgets: list[float], time_limit: float | None = None, node_limit: int | None = None,
               cancel: Any = None, progress: Callable[[Any], Any] | None = None,
               progress_interval: float = 1.0, progress_first: float = 0.0, budget_stop: Any = None) -> list[Any]:
    """The core's own results for checked budgets and limits (what :func:`solve` calls).

    Ctrl-C stops it as it stops :func:`solve`: in the main thread the core turns it into
    ``interrupted``; in another thread the token is registered for the Ctrl-C hook.
    """
    if threading.current_thread() is threading.main_thread():  # no context manager: a call costs less
        return _core.solve(problem, budgets, time_limit=time_limit, node_limit=node_limit,  # type: ignore[no-any-return]
                           cancel=cancel, progress=progress, progress_interval=progress_interval,
                           progress_first=progress_first, budget_stop=budget_stop)
    with _cancelled_by_ctrl_c(cancel) as token:
        return _core.solve(problem, budgets, time_limit=time_limit, node_limit=node_limit,  # type: ignore[no-any-return]
                           cancel=token, progress=progress, progress_interval=progress_interval,
                           progress_first=progress_first, budget_stop=budget_stop)


@contextmanager
def _cancelled_by_ctrl_c(cancel: Any) -> Iterator[Any]:
    """The token a solve watches; outside the main thread it is registered for Ctrl-C."""
    if threading.current_thread() is threading.main_thread():
        yield cancel  # the core itself turns Ctrl-C into "interrupted" here
        return
    token = cancel if cancel is not None else CancelToken()
    with _RUNNING_LOCK:
        _RUNNING.add(token)
    try:
        yield token
    finally:
        with _RUNNING_LOCK:
            _RUNNING.discard(token)


def _interrupt(signum: int, frame: Any) -> None:
    with _RUNNING_LOCK:
        running = list(_RUNNING)
    for token in running:
        token.cancel()
    signal.default_int_handler(signum, frame)


def _hook_ctrl_c() -> None:
    # Only Python's own handler is wrapped (a program's own SIGINT handler is left alone), and
    # only from the main thread, the one place signal handlers may be set.
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _interrupt)
    except (ValueError, OSError):  # an embedded interpreter without signals
        pass


_hook_ctrl_c()


@dataclass
class _Race:
    """HiGHS in a thread of its own (the machine's other core does the work), racing the
    branch-and-bound on one budget: the first to prove wins."""

    stop: HighsStop
    thread: threading.Thread
    outcome: Any = None  # the HandoffOutcome once HiGHS returns (None for log1p packages)
    reduced: bool = False  # on the root's open candidates (else on the whole MILP)
    runs_at: float = 0.0  # time.monotonic() at which HiGHS is due to start
    model: Any = None  # the MILP once built (a race that replaces this one reuses it)
    lp_bound: float | None = None  # the root LP's proven bound (solve/root_lp.py), once known
    lp_proof: tuple[tuple[int, ...], float] | None = None  # a store of HiGHS's that meets it

    def begun_for(self) -> float:
        """Seconds HiGHS has been running (at most; 0 while it waits)."""
        return max(0.0, time.monotonic() - self.runs_at)

    def proven(self) -> bool:
        return not self.thread.is_alive() and isinstance(self.outcome, HandoffOutcome) and self.outcome.proven


def _start_race(compiled: Any, budget: float, line: Any, time_limit: float | None, start_after: float = 0.0,
                budget_stop: Any = None, previous: _Race | None = None) -> _Race:
    """HiGHS beside the search: on the candidates the root left open once the root is done (OPT
    is the search's incumbent's value or a store of those), else on the whole MILP. Its model
    is built at once; HiGHS runs ``start_after`` seconds later, and after the ``previous`` race
    (stopped by the caller) has returned. A proof stops the search of ``budget`` through
    ``budget_stop`` (an atomic the search reads; no call into Python)."""
    from .handoff import finish_with_highs
    from .milp import build_milp
    from .root_lp import root_lp_bound

    reduced = bool(line.root_done)
    race = _Race(HighsStop(), threading.Thread(), reduced=reduced, runs_at=time.monotonic() + start_after)
    # HiGHS starts from no store, as it does alone: from the search's store it was slower as
    # often as faster, and up to ten times (timeline 1,000 @ 2%, 165 candidates open: 0.64 s
    # against 0.07 s; 3,300 @ 4%, whole MILP: 0.77 s against 0.48 s). On the open candidates
    # it proves OPT over them, and OPT is that or the incumbent's value (see _merge).
    candidates = list(line.open_candidates) if reduced else range(compiled.num_candidates)
    left = None if time_limit is None else max(0.0, time_limit - float(line.seconds) - start_after)

    def run() -> None:
        try:
            if previous is not None:
                previous.thread.join()  # one HiGHS solve at a time in a process
            if race.stop.is_set():
                return
            built = previous.model if previous is not None else None
            # HiGHS gets the MILP spelt plainly (see build_milp): its path through it is HiGHS
            # alone's. The root LP takes the model without what cannot count (a tighter LP).
            race.model = built if built is not None else build_milp(compiled, budget, plain=True)
            if previous is not None:
                race.lp_bound = previous.lp_bound
            elif budget_stop is not None:
                # First the root LP with the search's cuts (solve/root_lp.py): its bound goes to
                # the search, which prunes with it, and every store HiGHS finds is held up to it.
                if race.stop.wait(max(0.0, race.runs_at - time.monotonic())):
                    return
                race.lp_bound = root_lp_bound(compiled, build_milp(compiled, budget), stop=race.stop)
                if race.lp_bound is not None:
                    budget_stop.bound(budget, race.lp_bound)
            heard = _held_to_lp_bound(compiled, budget, race, budget_stop) if race.lp_bound is not None else None
            race.outcome = finish_with_highs(compiled, budget, candidates, None, time_limit=left,
                                             stop=race.stop, model=race.model, on_store=heard,
                                             start_after=max(0.0, race.runs_at - time.monotonic()))
            if race.lp_proof is not None and race.outcome is not None:
                store, value = race.lp_proof
                race.outcome = HandoffOutcome(True, store, value, race.outcome.milp, proved_by="root_lp")
            if budget_stop is not None and race.outcome is not None and race.outcome.proven:
                budget_stop.stop(budget)
        except Exception as exc:  # noqa: BLE001 - the branch-and-bound goes on without it
            race.outcome = exc

    # Not a daemon: at exit Python waits for it (its flag is set by then) rather than killing
    # HiGHS mid-solve, which aborts the process.
    race.thread = threading.Thread(target=run, name="memaudit-highs-race", daemon=False)
    race.thread.start()
    return race


def lp_bound_proves(value: float, bound: float, granularity: float) -> bool:
    """Whether a store worth ``value`` is optimal given ``bound`` >= OPT, with the search's
    tolerance (OPT <= value + 1e-9 max(1, |value|)); on a lattice (F in granularity * Z) the
    bound is first brought down to the lattice point below it, with room for rounding (only
    upwards: a lattice point a hair above the bound is kept)."""
    tol = 1e-9 * max(1.0, abs(value))
    if granularity > 1e3 * tol:
        bound = granularity * math.floor(bound / granularity + 1e-6)
    return bound <= value + tol


def _held_to_lp_bound(compiled: Any, budget: float, race: _Race, budget_stop: Any) -> Callable[[tuple[int, ...]], None]:
    """HiGHS's improving stores, each checked against the root LP's bound: one that meets it
    is optimal, and stops HiGHS and the search of ``budget``."""
    granularity = float(_core.objective_granularity(compiled.problem))

    def heard(store: tuple[int, ...]) -> None:
        if race.lp_proof is not None or race.lp_bound is None or _infeasible(compiled, store, budget):
            return
        chosen = tuple(sorted(store))
        value = float(compiled.objective(list(chosen)))
        if lp_bound_proves(value, race.lp_bound, granularity):
            race.lp_proof = (chosen, value)
            race.stop.set()  # HiGHS ends at its next check
            if budget_stop is not None:
                budget_stop.stop(budget)

    return heard


def _handoff_watch(
    log: Callable[[Any], None] | None, log_interval: float, handoff_after: float, races: dict[float, _Race],
    start_race: Callable[..., _Race], num_candidates: int,
) -> tuple[Callable[[Any], bool], float, float]:
    """The progress callback of a solve with ``finish``; passes lines to the caller's ``log`` at
    its pace. A budget not proven after ``handoff_after`` seconds starts HiGHS beside the search
    (see :func:`_start_race`); when HiGHS proves first, the search of that budget stops. The
    race of a budget the search moved past is stopped: highspy runs one solve per process at a
    time. A race that started on the whole MILP (of ``num_candidates``) moves to the root's
    open candidates when the root leaves few open before HiGHS has run long."""
    logged = [-math.inf]  # seconds of the last line passed on, within the current budget
    current: list[float | None] = [None]

    def watch(line: Any) -> bool:
        budget = float(line.budget)
        if budget != current[0] or line.seconds < logged[0]:  # a new budget started
            logged[0] = -math.inf
            current[0] = budget
            for other, earlier in races.items():
                if other != budget:
                    earlier.stop.set()
        if log is not None and line.seconds - logged[0] >= log_interval * 0.999:
            logged[0] = line.seconds
            log(line)
        if line.seconds < handoff_after - RACE_PREPARE:
            return False
        race = races.get(budget)
        if race is None:
            # Building the MILP starts a little early, so that HiGHS runs from handoff_after.
            races[budget] = start_race(budget, line, max(0.0, handoff_after - float(line.seconds)))
            return False
        if line.root_done and not race.reduced and race.thread.is_alive():
            # The root is done: a race on the whole MILP moves to the candidates it left open
            # when they are few (reduced-cost fixing removed most) and HiGHS has not run long,
            # or when HiGHS has hardly begun, since HiGHS on the smaller model is then much
            # faster than going on.
            kept, ran = len(line.open_candidates), race.begun_for()
            few = kept <= RACE_RESTART_SHARE * num_candidates and ran <= RACE_MOVE_LATEST
            if 0 < kept and (few or ran <= RACE_SWITCH_GRACE):
                race.stop.set()
                races[budget] = start_race(budget, line, max(0.0, handoff_after - float(line.seconds)), race)
                return False
        return race.proven()

    # Without a log, one line per budget when its race is due and none after: a race that
    # proves stops the search through its BudgetStop, and every call into Python from the
    # search thread waits for the GIL, which the race's HiGHS callbacks hold often (measured:
    # a line every 20 ms made a 0.18 s search take 0.29 s beside a race). With a log, lines
    # come at its pace, but at least every RACE_LOGGED seconds, so that the race starts on time.
    due = handoff_after - RACE_PREPARE
    if log is None:
        return watch, RACE_QUIET, max(RACE_FIRST, due)
    interval = min(log_interval, RACE_LOGGED)
    return watch, interval, max(RACE_FIRST, min(interval, due))


def _merge(compiled: Any, result: SolveResult, out: HandoffOutcome, seconds: float) -> SolveResult:
    """The branch-and-bound's result improved by what HiGHS found and proved."""
    ids = compiled.candidate_ids
    value, selected, cost = result.value, result.selected, result.cost
    if out.store is not None:
        store = sorted(out.store)
        candidate_value = float(compiled.objective(store))
        if candidate_value > value and not _infeasible(compiled, store, result.budget):
            value, selected = candidate_value, tuple(ids[i] for i in store)
            cost = float(sum(float(compiled.cost[i]) for i in store))
    upper = result.upper_bound
    if out.upper_bound is not None:
        upper = min(upper, max(value, out.upper_bound))
    upper = max(upper, value)
    proven = out.proven
    gap = max(0.0, (upper - value) / upper) if upper > 0 else 0.0
    return replace(result, status="optimal" if proven else result.status, proven_optimal=proven, value=value,
                   upper_bound=upper, gap=0.0 if proven else gap, selected=selected, cost=cost,
                   seconds=seconds, proved_by=out.proved_by if proven else None)


def _proved_by(result: Any) -> str | None:
    """Who proved a core result optimal: the search alone, or the search with the bound of the
    root LP handed to it (solve/root_lp.py)."""
    if not result.proven_optimal:
        return None
    return "root_lp" if result.external_bound_used else "branch_and_bound"


def _infeasible(compiled: Any, store: Sequence[int], budget: float) -> bool:
    from ..model.compiled import budget_limit

    groups = [int(compiled.group_of[i]) for i in store]
    return len(set(groups)) < len(groups) or float(sum(float(compiled.cost[i]) for i in store)) > budget_limit(budget)


def exact_opt(package: Any, budget: float, *, time_limit: float | None = None) -> float:
    """``OPT(B)`` from the exact branch-and-bound solver (its incumbent if stopped early)."""
    return float(solve(package, float(budget), time_limit=time_limit).value)
