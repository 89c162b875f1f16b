"""A few nodes of LP branch-and-cut after the root LP, to prove a store optimal.

Where the root LP with the engine's cuts (solve/root_lp.py) ends a lattice step or two above
the best store known, the store is often optimal and a handful of nodes show it: on a long
dialogue of 3,000 candidates at 20-40% of the total cost the LP stops at 1308.80 and OPT is
1308.75; fixing the one fractional candidate to 0 and to 1 gives two LPs of at most 1308.75.

The tree branches on the most fractional ``x`` (1 first), separates the coverage cuts once at
each node it cannot close (they hold for every store of the candidates the exact reductions
keep, so they join the LP for good), and closes a node when

* its 1-fixings cannot be a store (two in a group beyond its capacity, or over the budget): no
  store is there, shown without the LP; or
* the weak-duality bound of its LP (:func:`.root_lp.dual_bound` with the node's column
  bounds, which holds whatever HiGHS's tolerances) is at most the target ``value`` on its
  lattice (:func:`.race.lp_bound_proves`).

OPT is the largest OPT of the leaves, so a tree whose every leaf is closed proves OPT <= value.
A node whose LP is integral gives a store, exactly evaluated, that may raise ``value``. An LP
HiGHS does not solve to optimality, or a tree that outgrows its nodes or seconds, proves
nothing. This is the classic LP-based branch-and-bound (Land and Doig, 1960) with cuts at the
nodes (branch-and-cut; Padberg and Rinaldi, 1991), kept to a handful of nodes because it runs
before the racing HiGHS on the same core.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _core
from .root_lp import RootLp

#: Nodes at most. The trees this pays for are small (3-13 nodes on the large-budget suite);
#: one that is not closed by then rarely is soon, and HiGHS waits meanwhile.
LP_BRANCH_NODES = 24

#: Seconds at most (a node's LP takes 1-3 ms on 1,000-3,000 candidates, its cuts as much).
LP_BRANCH_SECONDS = 0.06

#: Lattice steps between the root LP's bound and the store at most for the tree to be tried:
#: from further away the store is seldom optimal, and the tree cannot close.
LP_BRANCH_STEPS = 2

#: An x this close to 0 or 1 counts as integral (HiGHS's primal feasibility tolerance is 1e-7).
INTEGRAL = 1e-6


@dataclass(frozen=True)
class BranchProof:
    """What the tree proved: OPT <= ``value``, and ``store`` (package candidate indices) is worth
    it; ``store`` is None when ``value`` is the caller's own store's."""

    value: float
    store: tuple[int, ...] | None
    nodes: int


def prove_at_most(
    compiled: Any, budget: float, lp: RootLp, value: float, *, stop: Any = None,
    nodes: int = LP_BRANCH_NODES, seconds: float = LP_BRANCH_SECONDS,
    proves: Callable[[float, float], bool],
) -> BranchProof | None:
    """Prove OPT(``budget``) <= ``value`` (a store's) by LP branch-and-cut from where ``lp``
    ended, within ``nodes`` and ``seconds``; ``proves(value, bound)`` says whether a node of
    proven ``bound`` is closed. None when it could not (the LP is left as it was found, but for
    cuts added: they hold for every store)."""

    from ..model.compiled import budget_limit
    from .backends import solve_lp_again

    rows = lp.rows
    if rows is None:
        return None
    started = time.monotonic()
    h, model = rows.highs, rows.model
    num_x = model.num_x
    columns = np.arange(num_x, dtype=np.int32)
    lower, upper = model.col_lower.copy(), rows.col_upper.copy()
    base_lower, base_upper = lower[:num_x].copy(), upper[:num_x].copy()
    candidate_of = np.asarray(model.candidates, dtype=np.int64)
    cost = np.asarray(compiled.cost, dtype=np.float64)
    group_of = np.asarray(compiled.group_of, dtype=np.int64)
    capacity, limit = int(compiled.group_capacity), budget_limit(budget)
    best: tuple[int, ...] | None = None
    stack: list[tuple[tuple[int, float], ...]] = [()]
    done = 0
    try:
        while stack:
            if done >= nodes or time.monotonic() - started > seconds or (stop is not None and stop.is_set()):
                return None
            fixed = stack.pop()
            done += 1
            ones = [column for column, side in fixed if side == 1.0]
            if not _fits(candidate_of[ones], cost, group_of, capacity, limit):
                continue  # no store holds these candidates together
            lower[:num_x], upper[:num_x] = base_lower, base_upper
            for column, side in fixed:
                lower[column] = upper[column] = side
            h.changeColsBounds(num_x, columns, lower[:num_x], upper[:num_x])
            for cut_round in range(2):
                solution = solve_lp_again(h, seconds - (time.monotonic() - started))
                if solution is None:
                    return None
                pi = np.abs(np.asarray(solution.row_dual, dtype=np.float64))
                if proves(value, rows.bound(pi, lower, upper)):
                    break  # closed
                x = np.asarray(solution.col_value, dtype=np.float64)[:num_x]
                fractional = np.minimum(x, 1.0 - x)
                column = int(np.argmax(fractional))
                if fractional[column] <= INTEGRAL:
                    # An integral LP optimum is a store whose worth is the LP's value: it raises
                    # the target, and closes the node unless tolerances say otherwise.
                    picked = candidate_of[x > 0.5]
                    if not _fits(picked, cost, group_of, capacity, limit):
                        return None
                    worth = float(compiled.objective(sorted(int(u) for u in picked)))
                    if worth > value:
                        value, best = worth, tuple(sorted(int(u) for u in picked))
                    if proves(value, rows.bound(pi, lower, upper)):
                        break
                    return None
                if cut_round == 0:
                    point = np.zeros(compiled.num_candidates)
                    point[candidate_of] = x
                    # The search's two families: with the envelope cuts too, the long dialogue
                    # of 3,000 @ 40% (LP 1308.80, OPT 1308.75) did not close in its time; in 3 nodes without.
                    cuts = _core.separate_coverage_cuts(compiled.problem, point.tolist(), pairs=False)[1]
                    if rows.add_cuts(cuts):
                        continue  # solved again with the cuts
                stack.append((*fixed, (column, 0.0)))
                stack.append((*fixed, (column, 1.0)))  # 1 first: the side that makes stores
                break
    finally:
        h.changeColsBounds(num_x, columns, base_lower, base_upper)
    return BranchProof(value, best, done)


def _fits(chosen: np.ndarray, cost: np.ndarray, group_of: np.ndarray, capacity: int, limit: float) -> bool:
    """Whether candidates ``chosen`` can be in one store (budget and group capacity)."""
    if not chosen.size:
        return True
    return float(cost[chosen].sum()) <= limit and int(np.bincount(group_of[chosen]).max()) <= capacity
