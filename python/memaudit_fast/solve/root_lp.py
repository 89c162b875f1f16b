"""The root LP with the search's own cuts: an upper bound on OPT(B) proven by LP duality.

HiGHS's simplex solves the LP relaxation of the package's MILP (:func:`.milp.build_milp`); the
core separates its coverage cuts (``cpp/src/cuts.cpp``: the search's two families, and the
envelope of a unit over two groups) at the LP optimum, over the candidates its exact
reductions keep (the others are fixed to 0: OPT is the reduced problem's), and the cuts join
the LP as rows, for a few rounds. Where the Lagrangian root of the search
creeps towards the LP's value and stops short (subgradient steps over hundreds of cut
multipliers), the LP reaches it at once: on a long dialogue of 3,003 candidates at 10-40% of
the total cost the LP with one or two rounds of cuts is OPT itself (1297.5), in 0.06 s.

The bound handed on is not HiGHS's objective value but weak duality evaluated here from its
row duals: for rows ``A v <= b``, boxes ``l <= v <= u`` and any multipliers ``pi >= 0``,

    OPT <= sum_i pi_i b_i + sum_j max(d_j l_j, d_j u_j),    d = c - A^T pi,

which holds whatever tolerances the LP was solved to (a dual that is slightly off only weakens
it), plus a margin for the rounding of this sum in floating point.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import _core
from .milp import MilpModel

#: Cut rounds at most (each: separate at the LP optimum, add the cuts, solve again). The stage
#: delays the racing HiGHS by its length, so it is kept short: the roots it closes on the bench
#: close within two rounds and 0.1 s (3,003 candidates), and MEMAUDIT-Small x70 @ 20%, which it
#: does not close, lost 0.1 s to it with eight rounds allowed.
ROOT_LP_ROUNDS = 4

#: Seconds the whole stage may take on up to ``ROOT_LP_SIZE`` candidates (each LP solve is
#: capped by what is left), and as the size's 1.5th power beyond: the simplex's time grows
#: faster than the package, and so does HiGHS's. On entity profiles of 10,000 candidates the
#: first LP alone takes 0.13-0.56 s (HiGHS on the MILP 4-7 s); under a flat 0.15 s most of them
#: never ended.
ROOT_LP_SECONDS = 0.15
ROOT_LP_SIZE = 3000


def size_factor(num_candidates: int) -> float:
    """How many times ``ROOT_LP_SIZE`` candidates a package has (1 at the least): the race's
    stages before HiGHS scale their time by it."""
    return max(1.0, num_candidates / ROOT_LP_SIZE)


def root_lp_seconds(num_candidates: int) -> float:
    """The stage's time on a package of ``num_candidates`` (see ``ROOT_LP_SECONDS``)."""
    return ROOT_LP_SECONDS * size_factor(num_candidates) ** 1.5

#: A round that lowers the LP's value by less than this (relative) ends the stage.
ROOT_LP_MIN_GAIN = 1e-7

#: Rounds of envelope cuts over two groups (cuts.hpp's third family) at the most, once the
#: search's two families no longer lower the LP: on MEMAUDIT-Small x70 at 10% two rounds take
#: it from 1317.32 to 1317.21, HiGHS's root bound (OPT 1316.96). They come last, and go again
#: when they do not lower it: the LP then ends at the vertex the two families leave, from which
#: a few nodes of LP branching prove a long dialogue of 3,000 at 40% (1308.80, OPT 1308.75),
#: and which the same rows that do not move the bound made that tree miss.
ROOT_LP_PAIR_ROUNDS = 3

#: Rounds of c-MIR cuts (solve/mir_cuts.py) at the most, once the coverage families stall,
#: within the stage's time: on a long dialogue of 1,002 candidates at 5% five take the LP from
#: 415.24 to 413.80 (OPT, on a lattice of 0.05), where HiGHS's root ends too.
ROOT_LP_MIR_ROUNDS = 8

#: Seconds the c-MIR rounds may take beyond the stage's own, on up to ROOT_LP_SIZE candidates
#: (scaled as the stage is): the dialogue above needs five rounds, 0.19 s, where the
#: families leave 0.12 s. A round that lowers the LP by less than ROOT_LP_MIR_MIN_GAIN
#: (relative) ends them.
ROOT_LP_MIR_SECONDS = 0.1
ROOT_LP_MIR_MIN_GAIN = 1e-5

#: Candidates at most for the c-MIR rounds: the stage's time grows with the size's 1.5th power
#: (0.6 s at 10,000), and they were not measured there yet.
ROOT_LP_MIR_MAX_CANDIDATES = 5000

#: Given the best store known, the c-MIR rounds go on while the last round's gain, repeated at
#: most this many times, would bring the LP under that store's next lattice point. Dialogue
#: 1,002 @ 5% needs at most 2.1 rounds at each step and proves at the fifth; @ 10% its first
#: round gains 0.056 with 0.23 to go, and there the rounds stopped only at the stage's end,
#: 0.2 s later (OPT 496.15, LP 496.48 -> 496.31), delaying HiGHS by as much.
ROOT_LP_MIR_PACE = 3

#: A round that lowers the LP by this many lattice steps or more is followed by another
#: whatever the pace: the best store known may be short of OPT, which the LP can then never
#: come under. MEMAUDIT-Small x70 @ 20% (seed 0, steps of 0.0125): the first round takes the LP
#: from 1428.325 to 1428.17 (12 steps), the second to OPT (1428.15), where the LP's
#: neighbourhood holds a store (proven at 0.15 s); stopped after the first, HiGHS proved it at
#: 0.53 s. On long dialogues at 10% the first round gains 1-2 steps of 0.05.
ROOT_LP_MIR_STEPS = 4

#: Where a round of the two families leaves the LP where it was (a gain of at most this,
#: relative) with its value on the objective's lattice, the root is taken as settled: the
#: envelope rounds are skipped and the c-MIR rounds separate only ROOT_LP_SETTLED_TABLEAU_ROWS
#: tableau rows (with the LP's own rows, which cost no basis inverse). Over the large-budget
#: suite's roots of seeds 0-14 (1,650), 557 settled so; after that the envelope rounds lowered
#: the LP on 2 and the c-MIR rounds on 10, with cuts that ten tableau rows also give: the
#: settled stage ended at the same bound on 1,649 roots and lower on one (without a time limit;
#: 165 s for the 1,650 stages against 211 s). On a long dialogue of 3,004 candidates at 10%
#: (seed 10) the LP is at OPT (1293.4) after two rounds, and the rounds after it moved nothing
#: for 0.15 s while HiGHS waited.
ROOT_LP_SETTLED_GAIN = 1e-9
ROOT_LP_SETTLED_TABLEAU_ROWS = 10

#: Relative rounding margin on the dual bound: every product and sum in it is rounded at most a
#: few thousand times (one per entry of a column), each by 2^-53; 1e-12 covers that with room.
ROUNDING_MARGIN = 1e-12


def reduced_costs(objective: np.ndarray, row_index: np.ndarray, row_value: np.ndarray, row_of_entry: np.ndarray,
                  pi: np.ndarray) -> np.ndarray:
    """``d = c - A^T pi`` for ``A`` given entry by entry (negative ``pi`` count as 0)."""
    weighted = row_value * np.maximum(pi, 0.0)[row_of_entry]
    return objective - np.bincount(row_index, weights=weighted, minlength=objective.size)


def dual_bound(objective: np.ndarray, col_lower: np.ndarray, col_upper: np.ndarray, row_index: np.ndarray,
               row_value: np.ndarray, row_of_entry: np.ndarray, row_upper: np.ndarray, pi: np.ndarray) -> float:
    """The weak-duality bound of ``max c.v : A v <= b, l <= v <= u`` at multipliers ``pi``
    (negative entries count as 0), rounded up by a margin that covers floating point."""
    pi = np.maximum(pi, 0.0)
    weighted = row_value * pi[row_of_entry]
    d = reduced_costs(objective, row_index, row_value, row_of_entry, pi)
    at_abs = np.bincount(row_index, weights=np.abs(weighted), minlength=objective.size)
    box = np.where(d > 0, d * col_upper, d * col_lower)
    if not np.all(np.isfinite(box)):
        return math.inf
    rows = pi * row_upper
    rows[pi == 0] = 0.0  # an unused row of infinite upper bound adds nothing
    if not np.all(np.isfinite(rows)):
        return math.inf
    scale = math.fsum(np.abs(rows)) + math.fsum((np.abs(objective) + at_abs) * np.maximum(np.abs(col_lower), np.abs(col_upper)))
    return math.fsum(rows) + math.fsum(box) + ROUNDING_MARGIN * scale + 1e-300


@dataclass
class LpRows:
    """The root LP as the stage left it, for going on from there (solve/lp_branching.py): HiGHS
    with its cuts, and every row as one CSR (entry by entry) for the dual bound."""

    highs: Any
    model: MilpModel
    col_of_x: np.ndarray  # LP column of each package candidate (-1: none)
    col_of_y: dict[int, int]  # LP column of each unit's y
    col_upper: np.ndarray  # the model's, with the candidates the exact reductions drop at 0
    entry_rows: list[np.ndarray]
    entry_cols: list[np.ndarray]
    entry_vals: list[np.ndarray]
    uppers: list[np.ndarray]
    num_rows: int

    def add_cuts(self, cuts: Any) -> int:
        """Add the core's coverage cuts (``_core.separate_coverage_cuts``) as rows; how many."""
        made = []
        for unit, intercept, candidates, coefficients in cuts:
            y = self.col_of_y.get(int(unit))
            if y is None:
                continue
            xs = self.col_of_x[np.asarray(candidates, dtype=np.int64)]
            coefs = -np.asarray(coefficients, dtype=np.float64)
            present = xs >= 0  # a candidate without a column is 0 in every store of the model
            made.append((np.concatenate([[y], xs[present]]), np.concatenate([[1.0], coefs[present]]), float(intercept)))
        return self.add_rows(made)

    def add_rows(self, cuts: Any) -> int:
        """Add rows ``coefficients . v <= right side``, each given as (columns, coefficients,
        right side) over the LP's columns; how many."""
        import highspy

        if not cuts:
            return 0
        lengths = [len(cols) for cols, _, _ in cuts]
        starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        cut_index = np.concatenate([np.asarray(cols, dtype=np.int64) for cols, _, _ in cuts])
        cut_value = np.concatenate([np.asarray(vals, dtype=np.float64) for _, vals, _ in cuts])
        cut_upper = np.asarray([float(rhs) for _, _, rhs in cuts])
        count = cut_upper.size
        self.highs.addRows(count, np.full(count, -highspy.kHighsInf), cut_upper, cut_index.size,
                           starts[:-1].astype(np.int32), cut_index.astype(np.int32), cut_value)
        self.entry_rows.append(np.repeat(np.arange(self.num_rows, self.num_rows + count), lengths))
        self.entry_cols.append(cut_index)
        self.entry_vals.append(cut_value)
        self.uppers.append(cut_upper)
        self.num_rows += count
        return count

    def drop_rows_from(self, first: int) -> None:
        """Remove the rows from ``first`` on (cuts added since), from HiGHS and from the bound."""
        if first >= self.num_rows:
            return
        self.highs.deleteRows(self.num_rows - first, np.arange(first, self.num_rows, dtype=np.int32))
        self._join()
        keep = self.entry_rows[0] < first
        for parts in (self.entry_cols, self.entry_vals, self.entry_rows):
            parts[0] = parts[0][keep]
        self.uppers[0] = self.uppers[0][:first]
        self.num_rows = first

    def bound(self, pi: np.ndarray, col_lower: np.ndarray, col_upper: np.ndarray) -> float:
        """:func:`dual_bound` of the LP with these column bounds at row duals ``pi``."""
        self._join()
        return dual_bound(self.model.objective, col_lower, col_upper, self.entry_cols[0], self.entry_vals[0],
                          self.entry_rows[0], self.uppers[0], pi)

    def reduced_costs(self, pi: np.ndarray) -> np.ndarray:
        """:func:`reduced_costs` of every column at row duals ``pi``."""
        self._join()
        return reduced_costs(self.model.objective, self.entry_cols[0], self.entry_vals[0], self.entry_rows[0], pi)

    def _join(self) -> None:
        if len(self.entry_cols) > 1:  # one array each from now on, until cuts come
            for parts in (self.entry_cols, self.entry_vals, self.entry_rows, self.uppers):
                parts[:] = [np.concatenate(parts)]


@dataclass(frozen=True)
class RootLp:
    """What the root LP stage proved and where it ended."""

    bound: float  # >= OPT, by weak duality at the duals of one of its LPs
    value: float  # the last LP's objective value (HiGHS's, within its tolerances)
    x: np.ndarray  # the last LP's x, one entry per package candidate (0 without a column)
    rows: LpRows | None = field(default=None, compare=False, repr=False)  # where it ended
    settled: bool = False  # the families left it on the objective's lattice (ROOT_LP_SETTLED_GAIN)


def root_lp_bound(compiled: Any, model: MilpModel, *, stop: Any = None, seconds: float | None = None,
                  rounds: int = ROOT_LP_ROUNDS) -> float | None:
    """An upper bound on OPT of ``model``'s budget (see the module docstring), or None when
    the model is not the exact MILP, the LP could not be solved, or ``stop`` was set first."""
    lp = root_lp(compiled, model, stop=stop, seconds=seconds, rounds=rounds)
    return None if lp is None else lp.bound


def root_lp(compiled: Any, model: MilpModel, *, stop: Any = None, seconds: float | None = None,
            rounds: int = ROOT_LP_ROUNDS, on_bound: Callable[[float], None] | None = None,
            mir_rounds: int = ROOT_LP_MIR_ROUNDS, target: Callable[[], float | None] | None = None) -> RootLp | None:
    """The stage of :func:`root_lp_bound`, with the last LP's point and value; ``seconds``
    defaults to :func:`root_lp_seconds` of the package. ``on_bound`` hears each round's proven
    bound as it comes (the race hands it to the search, which may end with it before the stage
    does); ``target`` tells the worth of the best store known (None: none yet), which the c-MIR
    rounds go on only while they close on it fast enough (ROOT_LP_MIR_PACE)."""
    import highspy

    from .backends import highs_of

    if model.approximation != "exact" or model.num_x == 0 or int(compiled.group_capacity) != 1:
        # The core's cuts and exact reductions take one candidate per group: a package of
        # larger capacity is solved as its package of composites (solve/capacity.py).
        return None
    if seconds is None:
        seconds = root_lp_seconds(int(compiled.num_candidates))
    started = time.monotonic()
    h = highs_of(model)
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    # Without presolve: over the large-budget suite's 360 LPs (seeds 0, 3, 4, 5) the stage took
    # 0.81x the time (median per LP), and the bound came out lower on 9 and higher on 6 (the
    # cuts follow the vertex the LP ends at). Dialogue 1,000 @ 10% (seed 5) reaches OPT there
    # (443.5 against 443.8), and its store proves at the root: 0.05 s against HiGHS's 0.08 s.
    h.setOptionValue("presolve", "off")
    h.changeColsIntegrality(model.num_x, np.arange(model.num_x, dtype=np.int32),
                            np.full(model.num_x, highspy.HighsVarType.kContinuous))
    num_x = model.num_x
    col_of_x = np.full(compiled.num_candidates, -1, dtype=np.int64)
    col_of_x[model.candidates] = np.arange(num_x)
    lengths = np.diff(model.row_starts)
    rows = LpRows(h, model, col_of_x, {int(r): num_x + k for k, r in enumerate(model.units)}, model.col_upper.copy(),
                  [np.repeat(np.arange(lengths.size), lengths)], [model.row_index.astype(np.int64)], [model.row_value],
                  [model.row_upper], int(lengths.size))
    best = math.inf
    last = math.inf
    point: tuple[float, np.ndarray] | None = None
    kept_fixed = False
    # The envelope cuts come once the two families stall: (rows before them, the LP's basis
    # and point there), to go back to if their first round does not lower the LP.
    pairs: tuple[int, Any, tuple[float, np.ndarray]] | None = None
    family_rounds = pair_rounds = 0
    c_mir = mir_rounds > 0 and compiled.num_candidates <= ROOT_LP_MIR_MAX_CANDIDATES
    settled = False
    for _ in range(rounds + ROOT_LP_PAIR_ROUNDS + 1):
        if stop is not None and stop.is_set():
            break
        solved = _solve_lp(compiled, rows, float(seconds) - (time.monotonic() - started), best, on_bound)
        if solved is None:
            break
        best, value, _, x = solved
        stalled = last - value < ROOT_LP_MIN_GAIN * max(1.0, abs(value))
        if pairs is None and c_mir and last - value <= ROOT_LP_SETTLED_GAIN * max(1.0, abs(value)) \
                and _on_lattice(compiled, value):
            point, settled = (value, x), True  # see ROOT_LP_SETTLED_GAIN: c-MIR rounds next
            break
        if pairs is not None and pair_rounds == 1 and stalled:
            first, basis, point = pairs  # the LP the two families left, its rows and vertex
            rows.drop_rows_from(first)
            h.setBasis(basis)
            break
        point = (value, x)
        if time.monotonic() - started > seconds:
            break
        if pairs is None and (stalled or family_rounds >= rounds):
            pairs = (rows.num_rows, h.getBasis(), point)
        elif pairs is not None and (stalled or pair_rounds >= ROOT_LP_PAIR_ROUNDS):
            break
        last = value
        kept, cuts = _core.separate_coverage_cuts(compiled.problem, x.tolist(), pairs=pairs is not None)
        if pairs is None and not cuts:
            # Nothing more from the two families: the envelope cuts at the same point.
            pairs = (rows.num_rows, h.getBasis(), point)
            kept, cuts = _core.separate_coverage_cuts(compiled.problem, x.tolist(), pairs=True)
        if pairs is None:
            family_rounds += 1
        else:
            pair_rounds += 1
        if not kept_fixed:
            # The cuts hold for the stores of the candidates the exact reductions keep (OPT is
            # theirs): the others are fixed to 0 before any cut is added.
            out = np.ones(compiled.num_candidates, dtype=bool)
            out[np.asarray(kept, dtype=np.int64)] = False
            cols = col_of_x[out]
            cols = cols[cols >= 0].astype(np.int32)
            if cols.size:
                rows.col_upper[cols] = 0.0
                h.changeColsBounds(cols.size, cols, np.zeros(cols.size), np.zeros(cols.size))
            kept_fixed = True
        if not rows.add_cuts(cuts):
            break
    if point is not None and kept_fixed and c_mir and (stop is None or not stop.is_set()):
        # The c-MIR stage has time of its own beyond what the families left.
        deadline = max(started + seconds, time.monotonic()) + ROOT_LP_MIR_SECONDS * seconds / ROOT_LP_SECONDS
        point, best = _mir_stage(compiled, rows, point, best, stop, deadline, mir_rounds, on_bound, target,
                                 tableau_rows=ROOT_LP_SETTLED_TABLEAU_ROWS if settled else None)
    if not math.isfinite(best) or point is None:
        return None
    return RootLp(best, *point, rows=rows if kept_fixed else None, settled=settled)


def _mir_stage(compiled: Any, rows: LpRows, point: tuple[float, np.ndarray], best: float, stop: Any,
               deadline: float, mir_rounds: int, on_bound: Callable[[float], None] | None,
               target: Callable[[], float | None] | None = None,
               tableau_rows: int | None = None) -> tuple[tuple[float, np.ndarray], float]:
    """Rounds of c-MIR cuts (solve/mir_cuts.py) with the coverage families at each new point,
    once the families alone stall: (the LP's value and x where it ends, the best bound). A
    stage whose first round does not lower the LP leaves no row behind and the LP at the
    vertex it found (which the LP's branching goes on from). ``tableau_rows``: tableau rows per
    round at the most (None: mir_cuts.MIR_TABLEAU_ROWS)."""
    from .mir_cuts import lattice_steps, separate_mir_cuts

    h, model = rows.highs, rows.model
    first, basis, start = rows.num_rows, h.getBasis(), point
    steps = lattice_steps(model)
    last = start[0]
    lowered = False
    for round_ in range(mir_rounds + 1):
        if stop is not None and stop.is_set():
            break
        solved = _solve_lp(compiled, rows, deadline - time.monotonic(), best, on_bound)
        if solved is None:
            break
        best, value, v, x = solved
        if round_ > 0:
            if last - value < ROOT_LP_MIR_MIN_GAIN * max(1.0, abs(value)):
                lowered = lowered or last - value > ROOT_LP_MIN_GAIN * max(1.0, abs(value))
                if lowered:
                    point = (value, x)
                break
            lowered = True
            point, last, gain = (value, x), value, last - value
            if not _closing(compiled, best, gain, target, min(ROOT_LP_MIR_PACE, mir_rounds - round_)):
                break
        if round_ == mir_rounds or time.monotonic() > deadline:
            break
        _, own = _core.separate_coverage_cuts(compiled.problem, x.tolist(), pairs=True)
        if not rows.add_rows(separate_mir_cuts(rows, steps, v, tableau_rows)) + rows.add_cuts(own):
            break
    if not lowered:
        rows.drop_rows_from(first)
        h.setBasis(basis)
        return start, best
    return point, best


def _solve_lp(compiled: Any, rows: LpRows, seconds: float, best: float,
              on_bound: Callable[[float], None] | None) -> tuple[float, float, np.ndarray, np.ndarray] | None:
    """Solve the LP in ``seconds`` at most: (the best bound so far, with this LP's by weak
    duality, told to ``on_bound``; the LP's value; its columns' values; x per package
    candidate), or None when it did not end at an optimum."""
    from .backends import solve_lp_again

    h, model = rows.highs, rows.model
    solution = solve_lp_again(h, seconds)
    if solution is None:
        return None
    pi = np.abs(np.asarray(solution.row_dual, dtype=np.float64))
    best = min(best, rows.bound(pi, model.col_lower, rows.col_upper))
    if on_bound is not None and math.isfinite(best):
        on_bound(best)
    v = np.asarray(solution.col_value, dtype=np.float64)
    x = np.zeros(compiled.num_candidates)
    x[model.candidates] = v[:model.num_x]
    return best, float(h.getInfo().objective_function_value), v, x


def _on_lattice(compiled: Any, value: float) -> bool:
    """Whether ``value`` (an LP's, within its tolerances) is a multiple of the objective's
    lattice step (``_core.objective_granularity``; never off a lattice)."""
    granularity = float(_core.objective_granularity(compiled.problem))
    if not granularity > 0:
        return False
    steps = value / granularity
    return abs(steps - round(steps)) < 1e-6


def _closing(compiled: Any, bound: float, gain: float, target: Callable[[], float | None] | None,
             rounds: int) -> bool:
    """Whether rounds that lower the LP by ``gain`` each would bring ``bound`` to the lattice
    point of the best store known within ``rounds`` (True without a store or a target, and
    after a gain of ROOT_LP_MIR_STEPS lattice steps; False once the bound proves that store)."""
    known = None if target is None else target()
    if known is None:
        return True
    granularity = float(_core.objective_granularity(compiled.problem))
    tol = 1e-9 * max(1.0, abs(known))
    reach = known + (granularity if granularity > 1e3 * tol else tol)  # the bound must come under it
    if bound < reach:
        return False  # the store known is optimal: no round can add to that
    if granularity > 0 and gain >= ROOT_LP_MIR_STEPS * granularity:
        return True
    return bound - reach <= rounds * gain
