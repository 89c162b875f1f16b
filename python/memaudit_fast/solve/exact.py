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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, overload

import numpy as np

from .. import _core
from ..errors import UsageError
from ..model.compiled import check_budget, check_budgets
from ..model.spec import RESULT_FORMAT
from .backends import HighsStop  # noqa: F401 - reached as exact.HighsStop
from .handoff import HandoffOutcome
from .race import (  # noqa: F401 - the race's names, as the tests and earlier callers reach them
    _held_to_lp_bound,
    _infeasible,
    _merge,
    _Race,
    _start_race,
    lp_bound_proves,
)
from .race_watch import (  # noqa: F401 - as above
    RACE_FIRST,
    RACE_LOGGED,
    RACE_MOVE_LATEST,
    RACE_NARROW_SHARE,
    RACE_PREPARE,
    RACE_QUIET,
    RACE_RESTART_SHARE,
    RACE_SWITCH_GRACE,
    handoff_watch,
)

__all__ = ["DEFAULT_FINISH", "FINISHERS", "RESULT_FORMAT", "STATUSES", "CancelToken", "SolveProgress", "SolveResult", "format_progress", "solve"]

#: The largest node limit the core counts to (a signed 64-bit count).
MAX_NODE_LIMIT = 2**63 - 1

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
#: 0.01 s (the race's root LP then starts at the first progress line, RACE_FIRST) took the
#: root LP's proofs of 1,000 candidates from 22 ms to 12-14 ms and the 110 cases' median from
#: 7.01x to 7.22x; 0.005 s also starts HiGHS on searches about to end in 5-10 ms and slowed
#: them (tie-heavy profile 1,000 @ 5%: 5.8 ms -> 10 ms; 6.3 ms at 0.01 s).
DEFAULT_HANDOFF_AFTER = 0.01




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
    from ..model.jsonio import MAX_EXACT_INT

    # Every argument is checked before the package is read, each named with what it must be:
    # the core would answer a wrong type with pybind11's "incompatible function arguments".
    def is_number(value: Any) -> bool:
        return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))

    if budgets is not None and not isinstance(budgets, (str, bytes, np.ndarray)) and hasattr(budgets, "__iter__"):
        budgets = list(budgets)  # a generator is read once, here
    for name, given in (("budget", budget), ("budgets", budgets)):
        items = given.tolist() if isinstance(given, np.ndarray) else given
        for b in items if isinstance(items, (list, tuple)) else [items]:
            if isinstance(b, (int, np.integer)) and not isinstance(b, (bool, np.bool_)) and abs(int(b)) > MAX_EXACT_INT:
                # The CLI and the package reader refuse these too: a double would round them.
                raise UsageError(f"{name}: integers are taken up to 2^53 = {MAX_EXACT_INT}, where every one is "
                                 f"exact; got {b}")
    if time_limit is not None and not (is_number(time_limit) and time_limit >= 0):
        raise UsageError(f"time_limit must be a number of seconds >= 0 (or None), got {time_limit!r}")
    if node_limit is not None and not (is_number(node_limit) and math.isfinite(node_limit)
                                       and int(node_limit) == node_limit and node_limit >= 0):
        raise UsageError(f"node_limit must be a non-negative integer (or None), got {node_limit!r}")
    if node_limit is not None and node_limit > MAX_NODE_LIMIT:
        raise UsageError(f"node_limit must be at most 2^63 - 1 = {MAX_NODE_LIMIT} (or none for no limit), got {node_limit!r}")
    if cancel is not None and not isinstance(cancel, CancelToken):
        raise UsageError(f"cancel must be a memaudit_fast.CancelToken (or None), got {type(cancel).__name__} {cancel!r}")
    if log is not None and not callable(log):
        raise UsageError(f"log must be a function taking one progress line (or None), got {log!r}")
    if not (is_number(log_interval) and log_interval > 0):
        raise UsageError(f"log_interval must be a number of seconds > 0, got {log_interval!r}")
    if finish is not None and not (isinstance(finish, str) and finish in ("auto", *FINISHERS)):
        raise UsageError(f"finish must be 'auto', one of {FINISHERS} or None, got {finish!r}")
    if not (is_number(handoff_after) and handoff_after >= 0):
        raise UsageError(f"handoff_after must be a number of seconds >= 0, got {handoff_after!r}")

    compiled = compile_package(package)
    if compiled.group_capacity > 1:  # an exact reduction to one per group (solve/capacity.py)
        from .capacity import solve_with_group_capacity

        return solve_with_group_capacity(  # type: ignore[no-any-return]
            solve, compiled, budget, budgets, time_limit=time_limit, node_limit=node_limit, cancel=cancel,
            log=log, log_interval=log_interval, finish=finish, handoff_after=handoff_after)
    todo, single = _budget_list(budget, budgets, compiled.budgets, compiled.package_id)
    if finish == "auto":
        finish = None if node_limit is not None else "highs"
    limit = None if time_limit is None or time_limit == math.inf else float(time_limit)
    progress: Callable[[Any], Any] | None = log
    interval, first = float(log_interval), 0.0
    races: dict[float, _Race] = {}  # HiGHS beside the search, one budget at a time
    budget_stop = None
    if finish is not None:
        budget_stop = _core.BudgetStop()
        stopper = budget_stop
        progress, interval, first = handoff_watch(
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
# Reentrant: a second Ctrl-C runs _interrupt again inside the first one (a handler runs between
# two steps of the main thread), and with a plain lock it waited for itself for good (GNU
# timeout -s INT sends the signal twice: a command hung).
_RUNNING_LOCK = threading.RLock()


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


def _proved_by(result: Any) -> str | None:
    """Who proved a core result optimal: the search alone, or the search with the bound of the
    root LP handed to it (solve/root_lp.py)."""
    if not result.proven_optimal:
        return None
    return "root_lp" if result.external_bound_used else "branch_and_bound"


def exact_opt(package: Any, budget: float, *, time_limit: float | None = None) -> float:
    """``OPT(B)`` from the exact branch-and-bound solver (its incumbent if stopped early)."""
    return float(solve(package, float(budget), time_limit=time_limit).value)
