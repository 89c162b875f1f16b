"""A store at the root LP's bound, looked for in the LP's neighbourhood (RINS).

On long dialogues at mid budgets the root LP with the search's cuts (solve/root_lp.py) is OPT
itself (3,001 candidates at 10%: 1289.6 in 0.1 s), so the proof lacks only a store worth that
much; the search's heuristics find one after 0.9 s, HiGHS alone after 0.3 s (its sub-MIP). RINS
(Danna, Rothberg and Le Pape, "Exploring relaxation induced neighborhoods to improve MIP
solutions", Math. Prog. 102, 2005) fixes every candidate on which the LP's point and the
search's incumbent agree (both 0, or both 1) and solves the MILP over the rest (100-200
candidates there) with HiGHS: in 0.03-0.1 s it finds a store at the LP's bound, which proves OPT.
The neighbourhoods of two stores of the search are searched in turn: the one it had when the
race began, then its best when the LP is done. The first is the wider (further from the point):
on 3,001 candidates at 10% (seed 3) it held a store at the bound and the second's did not.
Before them comes the LP's own neighbourhood, with no store (RENS: Berthold, "RENS: the optimal
rounding", Math. Prog. Comp. 6, 2014): only the candidates the LP's point holds fractionally are
free, often a few hundred where the LP is near integral.

It runs only where the LP's value sits on the objective's lattice (F in delta * Z for every
store, :func:`memaudit_fast._core.objective_granularity`): an LP worth a lattice point is often
OPT; one between two is not (the point under it may still be), and since a neighbourhood that
does not prove delays the racing HiGHS by up to ``RINS_SECONDS``, it is kept to the first kind
and to small neighbourhoods. It asks HiGHS only for stores at the lattice point under the LP's
bound (one row: the objective at least that). Whatever it finds is checked against the LP's
bound by the caller (``on_store``); nothing here is proven by the neighbourhood's own optimum.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence

import numpy as np

from .backends import HighsStop, MilpOutcome, solve_highs
from .handoff import HIGHS_TOLERANCE
from .milp import MilpModel, lattice_floor
from .root_lp import RootLp

#: Seconds the neighbourhood's HiGHS may take up to 3,000 candidates (the race scales it with
#: the package beyond, race.neighbourhood_seconds): those that proved on the bench took
#: 0.03-0.08 s, and one that does not prove costs the race this long (timeline 3,000 @ 10%, seed 3).
RINS_SECONDS = 0.1

#: How far (in lattice steps, plus a relative part) the LP's value may lie from a lattice point
#: and count as on it: the LPs that were OPT on the bench were within 1e-7 steps of it.
LATTICE_SLACK = 1e-6

#: The neighbourhood is searched only when at most this share of the x columns is left free:
#: those that proved on the bench left 134-216 of 2,700-2,800 free (5-8%); one of 650 free
#: (MEMAUDIT-Small x25 @ 20%) took HiGHS 1.8 s and proved nothing.
RINS_MAX_FREE_SHARE = 0.1

#: Relative room under the target value left for HiGHS's tolerances (a lattice step is about 1e-5
#: of the value or more on the bench).
TARGET_MARGIN = 1e-8

#: A candidate whose LP value is this close to 0 or 1 counts as 0 or 1.
INTEGRAL = 1e-6


def on_lattice(value: float, granularity: float) -> bool:
    """Whether ``value`` is a lattice point of step ``granularity`` (False without a lattice).
    A lattice too fine to tell (entity profiles: a step of 1e-5 on values of 4,000) passes every
    value, and that is kept: the search for a store at the LP's bound then runs wherever the LP
    may be OPT, and on profiles of 10,000 candidates at 40% it proves OPT at 0.25 s, where the
    branch-and-bound's root takes 0.4 s (without it: 0.41 s; where it finds nothing it cost
    0.07-0.14 s at 10,000 candidates, and fixing then starts from a better store)."""
    if not granularity > 0 or not math.isfinite(value):
        return False
    steps = value / granularity
    return abs(steps - round(steps)) <= LATTICE_SLACK + 1e-9 * abs(steps)


def neighbourhood(model: MilpModel, x: np.ndarray, stores: Sequence[Sequence[int]],
                  at_least: float | None = None) -> MilpModel:
    """``model`` with every x column fixed where the LP's point ``x`` (per package candidate) and
    every one of ``stores`` agree; with ``at_least``, only its stores worth that much (one row
    more: the objective at least ``at_least``)."""
    held_by = np.zeros(x.size, dtype=np.int64)  # how many of the stores hold each candidate
    for store in stores:
        held_by[np.unique(np.asarray(store, dtype=np.int64))] += 1
    at = x[model.candidates]
    held = held_by[model.candidates]
    lower, upper = model.col_lower.copy(), model.col_upper.copy()
    upper[: model.num_x][(at <= INTEGRAL) & (held == 0)] = 0.0
    lower[: model.num_x][(at >= 1.0 - INTEGRAL) & (held == len(stores))] = 1.0
    lower = np.minimum(lower, upper)  # a column the model already holds at 0 stays there
    near = dataclasses.replace(model, col_lower=lower, col_upper=upper)
    if at_least is None:
        return near
    (columns,) = np.nonzero(model.objective)
    return dataclasses.replace(
        near,
        row_starts=np.append(model.row_starts, model.row_starts[-1] + columns.size).astype(np.int32),
        row_index=np.concatenate([model.row_index, columns]).astype(np.int32),
        row_value=np.concatenate([model.row_value, model.objective[columns]]),
        row_lower=np.append(model.row_lower, at_least),
        row_upper=np.append(model.row_upper, np.inf))


def search_lp_neighbourhood(model: MilpModel, lp: RootLp, stores: Sequence[Sequence[int]], granularity: float, *,
                            stop: HighsStop, on_store: Callable[[tuple[int, ...]], None],
                            seconds: float = RINS_SECONDS) -> MilpOutcome | None:
    """HiGHS over the LP's own neighbourhood (RENS) and then that of each of ``stores`` in turn
    (the search's), for a store at the lattice point under the LP's bound, while ``stop`` is not
    set and ``seconds`` last; only where the LP's value is on the lattice, and only small
    neighbourhoods. Every store HiGHS finds goes to ``on_store``; returns the last
    neighbourhood's outcome (None: none searched)."""
    if not on_lattice(lp.value, granularity):
        return None
    # Only stores that prove: at the lattice point under the bound, less a margin far below one
    # step for HiGHS's tolerances. A neighbourhood without one ends as soon as its LP says so.
    target = lattice_floor(lp.bound, granularity)
    at_least = target - TARGET_MARGIN * max(1.0, abs(target))
    deadline = time.monotonic() + seconds
    outcome = None
    # First the LP's own neighbourhood (RENS: no store, so every candidate the point takes whole
    # or leaves out is fixed): redundant 10,000 @ 5% has its LP at OPT (896) at 0.12 s and a
    # store there in 217 free columns (0.05 s), while the search's stores were poorer and their
    # wider neighbourhoods held none within 0.33 s.
    neighbourhoods: list[list[Sequence[int]]] = [[]] + [[store] for store in stores]
    for held in neighbourhoods:
        left = deadline - time.monotonic()
        if left <= 0 or stop.is_set():
            break
        near = neighbourhood(model, lp.x, held, at_least=at_least)
        free = int(np.count_nonzero(near.col_upper[: near.num_x] > near.col_lower[: near.num_x]))
        if free > RINS_MAX_FREE_SHARE * near.num_x:
            continue
        outcome = solve_highs(near, time_limit=left, threads=1, feasibility_tolerance=HIGHS_TOLERANCE,
                              stop=_within(stop), on_store=on_store)
    return outcome


def best_near(model: MilpModel, lp: RootLp, store: Sequence[int], *, stop: HighsStop,
              on_store: Callable[[tuple[int, ...]], None] | None = None,
              seconds: float = RINS_SECONDS, at_least: float | None = None,
              max_free_share: float = RINS_MAX_FREE_SHARE) -> tuple[int, ...] | None:
    """The best store HiGHS finds within ``seconds`` in the LP's neighbourhood of ``store`` (a
    feasible store of the search's, its start), whatever the lattice: a better store in hand
    makes fixing by reduced costs (solve/lp_fixing.py) stronger. With ``at_least``, only stores
    worth that much (less HiGHS's margin) count, and a neighbourhood without one ends as soon
    as its LP says so. None when the neighbourhood is too wide (more than ``max_free_share`` of
    the x columns free) or HiGHS found nothing; every store it finds also goes to ``on_store``."""
    row = None if at_least is None or not math.isfinite(at_least) else at_least - TARGET_MARGIN * max(1.0, abs(at_least))
    near = neighbourhood(model, lp.x, [store], at_least=row)
    free = int(np.count_nonzero(near.col_upper[: near.num_x] > near.col_lower[: near.num_x]))
    if free > max_free_share * near.num_x or seconds <= 0 or stop.is_set():
        return None
    # The store is HiGHS's start only where it meets the row (else HiGHS would discard it).
    outcome = solve_highs(near, time_limit=seconds, start_store=store if row is None else None, threads=1,
                          feasibility_tolerance=HIGHS_TOLERANCE, stop=_within(stop), on_store=on_store)
    return outcome.store


def _within(stop: HighsStop) -> HighsStop:
    """A stop for a neighbourhood's HiGHS that ``stop`` still stops, but whose bound (over the
    neighbourhood only, not the MILP) is kept off ``stop.mip_bound``: the race reads that as the
    MILP's HiGHS being ahead of the search (race_watch._highs_ahead), and on an entity timeline of 1,000
    @ 5% (seed 2) a neighbourhood's bound kept the race off the 16% of candidates the search's
    root left open: 0.34 s against 0.13 s."""
    return HighsStop(parent=stop)


__all__ = ["RINS_MAX_FREE_SHARE", "RINS_SECONDS", "best_near", "neighbourhood", "on_lattice", "search_lp_neighbourhood"]
