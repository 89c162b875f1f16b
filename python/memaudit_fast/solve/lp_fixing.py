"""Reduced-cost fixing at the root LP: the candidates no store better than a known one can hold.

At row duals ``pi >= 0`` the root LP's weak-duality bound (:func:`.root_lp.dual_bound`) is

    U(pi) = sum_i pi_i b_i + sum_j max(d_j l_j, d_j u_j),    d = c - A^T pi,

and it stays a bound when a column's box shrinks. A store that holds candidate ``j`` lies in
the box with ``l_j = 1``, where column ``j`` adds ``d_j`` instead of ``max(0, d_j)``: every such
store is worth at most ``U(pi) + min(0, d_j)``. Where that is under the worth ``v`` of a store
in hand (on the objective's lattice: where it proves ``v``), no store holding ``j`` beats it,
so OPT is ``v`` or the optimum over the candidates left open (the classic fixing by reduced
costs; see e.g. Nemhauser and Wolsey, "Integer and Combinatorial Optimization", 1988, I.2.5).

On entity profiles the root LP with the search's cuts ends within 1e-4 of OPT; a store close
to OPT (from the LP's neighbourhood, solve/rins.py) then leaves 30-40% of the candidates
open, and HiGHS proves the smaller MILP about twice as fast as the whole one (profile 3,000
@ 5%, seed 6: 0.28 s against 0.89 s). HiGHS does the same at its root after its cuts and
sub-MIP heuristics, restarting on what is left.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .milp import lattice_floor
from .root_lp import RootLp

#: The race moves HiGHS to the open candidates only when they are at most this share of all:
#: over the race-won cases of seeds 0 and 6 the smaller MILP was faster at 11-40% open (1.2-2.2x
#: HiGHS alone, with the neighbourhood's time), while at 59% (timeline 1,000 @ 10%, seed 0)
#: HiGHS took 25 s on it against 7.5 s on the whole MILP. With the envelope cuts in the root LP
#: MEMAUDIT-Small x70 @ 10% leaves 44% open at OPT, and HiGHS proves those in 0.35 s against
#: 0.72 s for the whole MILP (x25 @ 10%, seed 6: 42%, 0.09 s against 0.19 s); at 40% they
#: stayed race-won at 0.79-0.91x. The neighbourhood search then looks for stores that leave
#: 50% too: aimed at 40% first (50% only where no store reaches 40%), it found no store to fix
#: by more often (profile 3,000 @ 10%: 2 runs of 3 at 0.84x against 2.4x; seed 6's x70 @ 10%
#: 0.79x against 1.24x), and gained only the dialogue of 1,002 @ 5% (0.86x against 0.75x, its
#: search ending at its LP instead of using its 0.1 s).
LP_FIX_SHARE = 0.5



def root_duals(lp: RootLp, seconds: float) -> np.ndarray | None:
    """Row duals of the root LP as ``lp`` left it (solved again, warm, in case a tree moved its
    point), one per row (0 for rows added since); None when HiGHS does not end optimal."""
    from .backends import solve_lp_again

    rows = lp.rows
    if rows is None:
        return None
    solution = solve_lp_again(rows.highs, seconds)
    if solution is None:
        return None
    pi = np.zeros(rows.num_rows)
    duals = np.abs(np.asarray(solution.row_dual, dtype=np.float64))
    pi[: min(duals.size, pi.size)] = duals[: pi.size]
    return pi


def _bounds_with(lp: RootLp, pi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The package candidates the exact reductions kept, and for each the bound on a store that
    holds it, ``U(pi) + min(0, d_j)`` (+inf for all when the bound is not finite)."""
    rows = lp.rows
    assert rows is not None
    model = rows.model
    kept = rows.col_upper[: model.num_x] > 0
    candidates = np.asarray(model.candidates, dtype=np.int64)[kept]
    bound = rows.bound(pi, model.col_lower, rows.col_upper)
    if not math.isfinite(bound):
        return candidates, np.full(candidates.size, math.inf)
    d = rows.reduced_costs(pi)[: model.num_x][kept]
    # Room for the rounding of d_j (a sum over a column's entries, far below this).
    return candidates, bound + np.minimum(d, 0.0) + 1e-9 * max(1.0, abs(bound))


def open_candidates(lp: RootLp, pi: np.ndarray, value: float, proves: Callable[[float, float], bool]) -> np.ndarray:
    """Package candidates that a store worth more than ``value`` may hold, by the bound at duals
    ``pi`` (see the module docstring); ``proves(value, bound)`` says whether stores of proven
    ``bound`` cannot beat ``value``. Candidates the exact reductions dropped are not open."""
    candidates, with_j = _bounds_with(lp, pi)
    closed = np.array([math.isfinite(b) and proves(value, float(b)) for b in with_j], dtype=bool)
    return candidates[~closed]


def few_open(lp: RootLp, pi: np.ndarray, value: float, proves: Callable[[float, float], bool], *,
             num_candidates: int, share: float = LP_FIX_SHARE) -> list[int] | None:
    """The open candidates (:func:`open_candidates`) when they are at most ``share`` of
    ``num_candidates``; else None (HiGHS is faster on the whole MILP)."""
    kept = open_candidates(lp, pi, value, proves)
    if kept.size > share * num_candidates:
        return None
    return [int(u) for u in kept]


def worth_to_close(lp: RootLp, pi: np.ndarray, granularity: float, *, num_candidates: int,
                   share: float = LP_FIX_SHARE) -> float:
    """The least worth of a store in hand that leaves at most ``share`` of ``num_candidates``
    open (:func:`open_candidates`, with the rule of ``race.lp_bound_proves`` on a lattice of
    step ``granularity``); -inf when no store is needed. A neighbourhood search for a store to
    fix by looks only for stores worth this much: the others leave too many open, and where
    none is there HiGHS says so at once (dialogue 1,002 @ 5%: 0.03 s against 0.1 s)."""
    _, with_j = _bounds_with(lp, pi)
    allowed = math.floor(share * num_candidates)
    if with_j.size <= allowed:
        return -math.inf
    # Every candidate but the ``allowed`` best must be closed: the next best one decides.
    decisive = float(np.partition(with_j, with_j.size - allowed - 1)[with_j.size - allowed - 1])
    if not math.isfinite(decisive):
        return math.inf  # no finite bound: no store closes enough
    # race.lp_bound_proves closes j for a worth v when (the lattice point under) its bound is at
    # most v + 1e-9 max(1, |v|): half of that room is left for rounding.
    tol = 1e-9 * max(1.0, abs(decisive))
    if math.isfinite(granularity) and granularity > 1e3 * tol:
        return lattice_floor(decisive, granularity)
    return decisive - 0.5 * tol


def best_unproven(bound: float, granularity: float) -> float:
    """The largest worth a store can have without meeting ``bound``: on a lattice (step
    ``granularity``) the point a step under the lattice point at or under the bound, else just
    under the bound. Fixing at this worth shows the most that any store in hand can close."""
    if math.isfinite(granularity) and granularity > 1e-6 * max(1.0, abs(bound)):  # as lp_bound_proves
        return lattice_floor(bound, granularity) - granularity
    return bound - 1e-9 * max(1.0, abs(bound))


__all__ = ["LP_FIX_SHARE", "best_unproven", "few_open", "open_candidates", "root_duals", "worth_to_close"]
