"""Finishing a proof with HiGHS when the branch-and-bound leaves it open.

The branch-and-bound reports, with every unproven result, the candidates that any store
better than its incumbent must be made of (``open_candidates``: what the exact reductions
and the reduced-cost fixing at the root left). So

.. math::

    OPT(B) = \\max\\big(F(X_{inc}),\\; OPT_{open}(B)\\big),

where :math:`OPT_{open}` is the optimum of the MILP with every other x column fixed to 0.
That MILP goes to HiGHS, which runs in a thread beside the search (``solve/exact.py``), from
no start store, as it runs alone (the search's store slowed it down as often as it helped);
the result then says which engine proved it (``proved_by``). Where every store's worth is a
multiple of a step (the objective's lattice), HiGHS is stopped once its bound is less than a
step above its store: no better store fits between them. Before the root is done every
candidate is open, and HiGHS gets the whole MILP. Only saturations the MILP models exactly
(cap1, linear, PWL) are handed off: for log1p the MILP is an approximation and cannot prove
equality.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .backends import HighsStop, MilpOutcome, _abs_gap, highs_version, solve_highs
from .milp import MilpModel, build_milp

__all__ = ["HandoffOutcome", "finish_with_highs", "lattice_gap", "restrict_to"]

#: HiGHS's default feasibility tolerance, asked of the hand-off explicitly.
HIGHS_TOLERANCE = 1e-6

#: Where no lattice separates the worths of stores, HiGHS's proof stands within its tolerances
#: only: at 1e-6 a float-weighted package of 200 candidates was "proven" at a store 1.2e-9
#: (relative) under OPT, HiGHS's bound 1.3e-8 under it. At 1e-9 both are right (the solve took
#: about twice as long there); on a lattice a step is far above either, and 1e-6 stays.
HIGHS_TIGHT_TOLERANCE = 1e-9

#: Relative slack added to a bound reported by HiGHS: its tolerances, not ours, stand behind it.
HIGHS_BOUND_SLACK = 1e-7


@dataclasses.dataclass(frozen=True)
class HandoffOutcome:
    """What the hand-off found: a store (package candidate indices) and a proven bound."""

    proven: bool
    store: tuple[int, ...] | None  # HiGHS's incumbent, if it has one
    upper_bound: float | None  # >= OPT over the open candidates (None when HiGHS has none)
    milp: MilpOutcome
    proved_by: str = "highs"  # "root_lp": the root LP's bound, or its tree (solve/lp_branching.py), closed it


def restrict_to(model: MilpModel, candidates: Sequence[int]) -> MilpModel:
    """The same MILP with every x column outside ``candidates`` fixed to 0."""
    keep = np.isin(model.candidates, np.asarray(candidates, dtype=np.int64))
    upper = model.col_upper.copy()
    upper[: model.num_x] = np.where(keep, upper[: model.num_x], 0.0)
    return dataclasses.replace(model, col_upper=upper)


def lattice_gap(model: MilpModel, granularity: float) -> float | None:
    """How far above its store HiGHS's bound may stay when every store's worth is a multiple of
    ``granularity``: a better store lies a step above, so a bound less than a step above proves
    the store optimal (HiGHS's own tiny gap is kept to spare). None where the step is too fine
    to matter (or 0). On a dialogue of 3,003 candidates at 10% (step 0.05) the race's HiGHS is
    then done at 1.6 s, against 2.4 s when it closes the last step itself.
    """
    tiny = _abs_gap(model)
    if not math.isfinite(granularity) or granularity <= 1e3 * tiny:
        return None
    return granularity - tiny


def _stop_short_of(model: MilpModel, granularity: float, floor: Callable[[], float] | None) -> float | None:
    """How close HiGHS's bound must come to the best store known for a proof: a lattice step
    (:func:`lattice_gap`), else HiGHS's own tiny gap when a store known elsewhere can be the
    one proven (``floor``), else None (HiGHS ends by itself)."""
    gap = lattice_gap(model, granularity)
    if gap is None and floor is not None:
        return _abs_gap(model)
    return gap


def finish_with_highs(
    compiled: Any, budget: float, open_candidates: Sequence[int], incumbent: Sequence[int] | None,
    *, time_limit: float | None = None, model: MilpModel | None = None, stop: HighsStop | None = None,
    start_after: float = 0.0, on_store: Callable[[tuple[int, ...]], None] | None = None,
    granularity: float = 0.0, floor: Callable[[], float] | None = None, cutoff: bool = False,
) -> HandoffOutcome | None:
    """HiGHS on the open part of the MILP, started from ``incumbent`` (if any); None when the
    package's saturation has no exact MILP (log1p). With ``start_after``, the model is built
    at once and HiGHS runs that many seconds later, unless ``stop`` is set meanwhile. With the
    objective's ``granularity`` (every F(X) a multiple of it; 0: none known), HiGHS's store is
    proven once its bound is less than a step above it (:func:`lattice_gap`). ``floor``: the
    worth of the best store known outside HiGHS (see ``solve_highs``); a bound that close to it
    proves that store optimal, and the outcome is proven with its worth as the bound. With
    ``cutoff`` (and a lattice), HiGHS prunes from the start every node that cannot beat the
    floor's worth then by a step (``solve_highs``'s ``cutoff``: half a step above it)."""
    run_at = time.monotonic() + start_after
    if model is None:
        model = build_milp(compiled, budget)
    if model.approximation != "exact":
        return None
    restricted = restrict_to(model, open_candidates)
    delay = run_at - time.monotonic()
    waited = stop.wait(delay) if stop is not None and delay > 0 else False
    if waited or (stop is not None and stop.is_set()):  # stopped while the model was being built
        return HandoffOutcome(False, None, None, MilpOutcome("highs", highs_version(), "interrupted", None, None, None, 0, 0.0))
    lattice_known = lattice_gap(restricted, granularity) is not None
    # HiGHS's store is re-evaluated exactly by the caller; one thread.
    outcome = solve_highs(restricted, time_limit=time_limit, start_store=incumbent,
                          feasibility_tolerance=HIGHS_TOLERANCE if lattice_known else HIGHS_TIGHT_TOLERANCE, threads=1, stop=stop, on_store=on_store,
                          short_of=_stop_short_of(restricted, granularity, floor), floor=floor,
                          cutoff=granularity / 2 if cutoff and lattice_known else None,
                          granularity=granularity if lattice_known else 0.0)
    proven = outcome.status == "optimal"
    bound = outcome.bound
    if bound is None or not math.isfinite(bound):
        bound = None
    elif not proven:
        bound = bound + HIGHS_BOUND_SLACK * max(1.0, abs(bound))
    return HandoffOutcome(proven, outcome.store, bound, outcome)
