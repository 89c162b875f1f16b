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
search runs, so several packages may be solved from several threads at once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np

from .. import _core
from ..errors import UsageError
from ..model.compiled import check_budget, check_budgets
from ..results.records import result_record

__all__ = ["STATUSES", "CancelToken", "SolveResult", "solve"]

#: Every status a result can carry (``error`` is used only by batch records).
STATUSES = ("optimal", "time_limit", "node_limit", "interrupted")

#: A flag another thread may set to stop every solve that watches it.
CancelToken = _core.CancelToken


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

    def to_record(self) -> dict[str, Any]:
        """The ``memaudit.result/1`` record (``opt`` is ``value``)."""
        return result_record(
            package_id=self.package_id, budget=self.budget, saturation=self.saturation,
            weights_rule=self.weights_rule, opt=self.value, upper_bound=self.upper_bound,
            gap=self.gap, status=self.status, proven_optimal=self.proven_optimal,
            selected=self.selected, cost=self.cost, nodes=self.nodes, seconds=self.seconds,
        )


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
) -> list[SolveResult]: ...


def solve(
    package: Any,
    budget: Any = None,
    *,
    budgets: Any = None,
    time_limit: float | None = None,
    node_limit: int | None = None,
    cancel: Any = None,
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

    Raises
    ------
    UsageError
        Bad budgets or limits, or no budget at all for a package without budgets.
    PackageError
        The package does not validate.
    """
    from ..model.compiled import compile_package

    compiled = compile_package(package)
    todo, single = _budget_list(budget, budgets, compiled.budgets, compiled.package_id)
    if time_limit is not None and (isinstance(time_limit, bool) or not float(time_limit) >= 0):
        raise UsageError(f"time_limit must be >= 0 seconds, got {time_limit!r}")
    if node_limit is not None and (isinstance(node_limit, bool) or int(node_limit) != node_limit or node_limit < 0):
        raise UsageError(f"node_limit must be a non-negative integer, got {node_limit!r}")
    raw = _core.solve(
        compiled.problem,
        todo,
        time_limit=None if time_limit is None or time_limit == math.inf else float(time_limit),
        node_limit=None if node_limit is None else int(node_limit),
        cancel=cancel,
    )
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
            selected=tuple(ids[i] for i in r.selected),
            cost=float(r.cost),
            nodes=int(r.nodes),
            seconds=float(r.seconds),
        )
        for r in raw
    ]
    return results[0] if single else results


def exact_opt(package: Any, budget: float, *, time_limit: float | None = None) -> float:
    """``OPT(B)`` from the exact branch-and-bound solver (its incumbent if stopped early)."""
    return float(solve(package, float(budget), time_limit=time_limit).value)
