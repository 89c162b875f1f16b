"""The MILP of a package at budget B, in a solver-neutral array form (MISSION.md section 3).

.. math::

    \\max \\sum_r w_r y_r \\quad\\text{s.t.}\\quad
    y_r \\le \\alpha_{rk} + \\beta_{rk} \\sum_u a_{ur} x_u \\;(\\text{each linear piece } k \\text{ of } h_r),
    \\quad 0 \\le y_r \\le h_r^{max},
    \\quad \\sum_{u \\in g} x_u \\le k \\;(\\text{each group } g),
    \\quad \\sum_u c_u x_u \\le B, \\quad x_u \\in \\{0, 1\\}.

``k`` is the group capacity (``objective.group_capacity``, 1 by default).

For a concave, non-decreasing piecewise-linear h the hypograph rows are exact: at an
optimum ``y_r = min_k(alpha_k + beta_k z_r) = h_r(z_r)``. ``cap1`` is the single piece
``y <= z`` with ``y <= 1``; ``linear`` the single piece with no cap (bounded here by the
largest reachable coverage). ``log1p`` is not piecewise linear: :func:`build_milp` then
builds an *inner* model (chords between breakpoints, below h: its optimum bounds OPT from
below) or an *outer* one (tangents at the breakpoints, above h: its bound is an upper bound
on OPT). Breakpoints are spaced geometrically in ``1 + z`` on ``[0, Z_r]`` (``Z_r`` the
largest coverage unit r can reach with k candidates per group), which equalises the
chord error of log1p, whose curvature is ``1/(1+z)^2``.

Left out of the model because they cannot change its value: units of weight 0 or that no
affordable candidate covers, candidates costing more than B or covering no kept unit,
pieces that start beyond ``Z_r``, group rows of groups with at most k candidates and a budget row
that every store satisfies.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from dataclasses import dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CertificationError, UsageError
from ..model.compiled import CompiledPackage, budget_limit

LOG1P_MODES = ("inner", "outer")


@dataclass(frozen=True)
class MilpModel:
    """Columns ``[x_0..x_{n-1}, y_0..y_{m-1}]``; rows in CSR with ``row_lower <= A v <= row_upper``.

    ``candidates[j]`` is the package candidate of column ``x_j``; ``units[k]`` the unit of
    ``y_k``. The objective is maximised.
    """

    candidates: np.ndarray  # int32
    units: np.ndarray  # int32
    objective: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    row_starts: np.ndarray  # int32, num_rows + 1
    row_index: np.ndarray  # int32
    row_value: np.ndarray
    row_lower: np.ndarray
    row_upper: np.ndarray
    approximation: str  # "exact", "inner" or "outer"
    # Columns beyond the x that are integer too (on_unit_lattice: a y counted in steps of
    # its unit's lattice); None: every y is continuous.
    integral_y: np.ndarray | None = None

    @property
    def num_x(self) -> int:
        return int(self.candidates.size)

    @property
    def num_cols(self) -> int:
        return int(self.objective.size)

    @property
    def num_rows(self) -> int:
        return int(self.row_lower.size)

    def implied_upper(self) -> np.ndarray:
        """Every column's upper bound, or, where that is infinite, the tightest one its rows
        imply given the other columns' boxes (for ``y`` under a linear h, spelt plainly: its
        piece row ``y - sum_u a_ur x_u <= 0`` gives ``y <= sum_u a_ur``); inf where none does."""
        upper = self.col_upper.astype(np.float64, copy=True)
        if self.num_rows == 0 or np.all(np.isfinite(upper)):
            return upper
        lengths = np.diff(self.row_starts).astype(np.int64)
        row_of = np.repeat(np.arange(self.num_rows, dtype=np.int64), lengths)
        col, value = self.row_index.astype(np.int64), self.row_value
        with np.errstate(invalid="ignore"):  # 0 * inf: an entry of 0 adds nothing
            low = np.where(value > 0, value * self.col_lower[col], value * upper[col])
        low = np.where(value == 0, 0.0, low)
        least = np.zeros(self.num_rows)  # sum of every entry's least value, per row (may be -inf)
        np.add.at(least, row_of, low)
        finite = np.isfinite(low)
        # A positive entry's column is at most (row_upper - the row's other least values) / value.
        use = (value > 0) & finite & np.isfinite(least[row_of]) & np.isfinite(self.row_upper[row_of]) \
            & ~np.isfinite(upper[col])
        implied = (self.row_upper[row_of[use]] - (least[row_of[use]] - low[use])) / value[use]
        np.minimum.at(upper, col[use], implied)
        return upper


#: Largest denominator of a coverage amount read as a fraction (as the core's granularity).
LATTICE_DENOMINATOR = 1 << 24

#: Largest coefficient of a row counted in lattice steps (and largest cap, in steps): beyond
#: it y is left continuous. HiGHS 1.16 is not safe on fine lattices: on a MEMAUDIT-Small
#: package with amounts of 2-7 decimals (steps down to 1e-6, objective coefficients down to
#: 1e-7) it stated an optimum 0.05 under OPT. The bench's families count at most 100 steps
#: (0.01 on entity profiles, 0.05 on dialogues, 0.1 on timelines, 0.25 on MEMAUDIT-Small).
LATTICE_MAX_STEPS = 100


def _as_fraction(value: float) -> tuple[int, int] | None:
    """``value`` as num / den with den <= LATTICE_DENOMINATOR, exact to a relative 1e-12
    (the core's ``as_fraction``); None when no such fraction is that close."""
    if not (value > 0.0) or value > 1e15:
        return None
    frac = Fraction(value).limit_denominator(LATTICE_DENOMINATOR)
    if frac <= 0 or abs(frac.numerator / frac.denominator - value) > 1e-12 * value:
        return None
    return frac.numerator, frac.denominator


def on_unit_lattice(model: MilpModel) -> MilpModel:
    """The same MILP with each ``y`` whose values lie on a lattice counted in steps of it, as an
    integer column.

    A unit with one piece row ``y - sum_u a_u x_u <= 0`` (cap1 and linear h) and a cap kappa
    (or none) takes, at a store, the value min(kappa, sum a_u x_u): a whole multiple of
    s = gcd(a_u, kappa) whenever the a_u and kappa are (rational) multiples of s. With
    y = s Y the row becomes ``Y - sum_u (a_u / s) x_u <= 0`` over whole numbers, Y <= kappa / s
    an integer, and w s the objective's coefficient: every store keeps its worth, and the LP
    relaxation is unchanged. But the solver now knows that y moves in steps: on an entity
    timeline of 1,000 candidates at 10% HiGHS proves OPT in 1.3-2.3 s (four random seeds;
    500-1,700 nodes) against 4.9-9.0 s (4,100-9,600 nodes), and on a long dialogue of 1,002
    at 10% in 1.0-1.2 s against 1.7-2.4 s. Units of other shapes (PWL, log1p), or whose amounts
    are no such multiples, keep their y as it is.
    """
    num_x, num_rows = model.num_x, model.num_rows
    if model.num_cols == num_x or num_rows == 0:
        return model
    lengths = np.diff(model.row_starts).astype(np.int64)
    row_of = np.repeat(np.arange(num_rows, dtype=np.int64), lengths)
    col = model.row_index.astype(np.int64)
    value = model.row_value
    is_y = col >= num_x
    # A y column qualifies when it has exactly one entry, +1, in a row of right side 0 whose
    # other entries are x columns with negative coefficients.
    y_count = np.bincount(col[is_y] - num_x, minlength=model.num_cols - num_x)
    y_rows = np.bincount(row_of[is_y], minlength=num_rows)
    ok_row = (y_rows == 1) & (model.row_upper == 0.0) & ~np.isfinite(model.row_lower)
    bad = np.zeros(num_rows, dtype=bool)
    np.logical_or.at(bad, row_of[~is_y], value[~is_y] >= 0)
    ok_row &= ~bad
    y_entry = np.flatnonzero(is_y)
    y_col_of_row = np.full(num_rows, -1, dtype=np.int64)
    good = ok_row[row_of[y_entry]] & (value[y_entry] == 1.0) & (y_count[col[y_entry] - num_x] == 1)
    y_col_of_row[row_of[y_entry[good]]] = col[y_entry[good]]
    rows = np.flatnonzero(y_col_of_row >= 0)
    if rows.size == 0:
        return model
    # Every amount (and cap) as a whole number of 1 / common, the distinct ones converted once.
    entries = np.flatnonzero((y_col_of_row[row_of] >= 0) & ~is_y)  # by row (CSR order)
    amounts = -value[entries]
    y_of_rows = y_col_of_row[rows]
    caps = model.col_upper[y_of_rows]
    distinct, which = np.unique(np.concatenate([amounts, np.where(np.isfinite(caps), caps, 1.0)]),
                                return_inverse=True)
    fractions = [_as_fraction(v) for v in distinct.tolist()]
    common = 1
    for f in fractions:
        if f is not None:
            common = math.lcm(common, f[1])
    numbers = [0 if f is None else f[0] * (common // f[1]) for f in fractions]
    if common > 1 << 40 or max(numbers) >= 1 << 62:
        return model
    steps = np.asarray(numbers, dtype=np.int64)[which]  # 0: not such a fraction
    numer, cap_numer = steps[:amounts.size], steps[amounts.size:]
    cap_numer = np.where(np.isfinite(caps), cap_numer, -1)  # -1: no cap
    # Per row: the gcd of its amounts and its cap; a row with an amount (or cap) that is no
    # such fraction stays as it is.
    row_pos = np.searchsorted(rows, row_of[entries])
    has = np.zeros(rows.size, dtype=bool)
    has[row_pos] = True
    first = np.searchsorted(row_pos, np.flatnonzero(has))
    step = np.zeros(rows.size, dtype=np.int64)
    least = np.full(rows.size, 1, dtype=np.int64)
    largest = np.zeros(rows.size, dtype=np.int64)
    if entries.size:
        step[has] = np.gcd.reduceat(numer, first)
        least[has] = np.minimum.reduceat(numer, first)
        largest[has] = np.maximum.reduceat(numer, first)
    step = np.where(cap_numer > 0, np.gcd(step, np.maximum(cap_numer, 0)), step)
    usable = (least > 0) & (cap_numer != 0) & (step > 0)
    safe = np.where(step > 0, step, 1)
    usable &= np.maximum(largest, cap_numer) // safe <= LATTICE_MAX_STEPS
    if not usable.any():
        return model
    objective, col_upper, row_value = model.objective.copy(), model.col_upper.copy(), model.row_value.copy()
    js = y_of_rows[usable]
    objective[js] *= step[usable] / common
    capped = usable & (cap_numer > 0)
    col_upper[y_of_rows[capped]] = (cap_numer[capped] // step[capped]).astype(np.float64)
    scaled = usable[row_pos]
    row_value[entries[scaled]] = -(numer[scaled] // step[row_pos[scaled]]).astype(np.float64)
    integral = np.zeros(model.num_cols - num_x, dtype=bool)
    integral[js - num_x] = True
    return replace(model, objective=objective, col_upper=col_upper, row_value=row_value, integral_y=integral)


@dataclass(frozen=True)
class Pieces:
    """Linear pieces ``alpha_k + beta_k z`` whose minimum, capped at ``cap``, models h."""

    alpha: tuple[float, ...]
    beta: tuple[float, ...]
    cap: float


def saturation_pieces(spec, reach: float, *, log1p_mode: str = "inner", breakpoints: int = 32) -> Pieces:
    """The pieces of one saturation h over coverage ``[0, reach]``."""
    name = spec.name
    if name == "cap1":
        return Pieces((0.0,), (1.0,), min(1.0, reach))
    if name == "linear":
        return Pieces((0.0,), (1.0,), reach)
    if name == "pwl":
        alpha: list[float] = []
        beta: list[float] = []
        cap = 0.0
        for (z0, h0), (z1, h1) in zip(spec.points, spec.points[1:]):
            if z0 >= reach:
                break
            slope = (h1 - h0) / (z1 - z0)
            cap = h0 + slope * (min(z1, reach) - z0)
            if slope > 0:
                alpha.append(h0 - slope * z0)
                beta.append(slope)
        return Pieces(tuple(alpha), tuple(beta), cap)
    if name == "log1p":
        if log1p_mode not in LOG1P_MODES:
            raise CertificationError(f"log1p_mode must be one of {LOG1P_MODES}, got {log1p_mode!r}")
        k = max(1, int(breakpoints))
        grid = [math.expm1(math.log1p(reach) * j / k) for j in range(k + 1)]
        grid[-1] = reach
        if log1p_mode == "outer":
            # Tangent at t: log1p(t) + (z - t) / (1 + t) >= log1p(z) by concavity.
            alpha = [math.log1p(t) - t / (1.0 + t) for t in grid]
            beta = [1.0 / (1.0 + t) for t in grid]
        else:
            # Chord between consecutive grid points: below log1p on [0, reach].
            alpha, beta = [], []
            for t0, t1 in itertools.pairwise(grid):
                if t1 <= t0:
                    continue
                slope = (math.log1p(t1) - math.log1p(t0)) / (t1 - t0)
                alpha.append(math.log1p(t0) - slope * t0)
                beta.append(slope)
        return Pieces(tuple(alpha), tuple(beta), math.log1p(reach))
    raise CertificationError(f"no MILP model for saturation {name!r}")


def build_milp(
    compiled: CompiledPackage, budget: float, *, log1p_mode: str = "inner", breakpoints: int = 32,
    plain: bool = False,
) -> MilpModel:
    """The MILP of ``compiled`` at ``budget`` (see the module docstring).

    Built with array operations, not per non-zero: it runs beside the search when a solve
    races HiGHS, and Python work there slows the search (every call back into Python from it
    waits for the GIL). Rows come in a fixed order: the pieces of each kept unit (units
    ascending, each row ``y`` first, then ``x`` by candidate), the group rows (groups in order
    of their first column), the budget row.

    ``plain``: the model as the formulation reads, nothing left out but units of weight 0: a
    column for every candidate, ``y`` capped by h's own maximum (every piece of a PWL), the
    budget row always. HiGHS's path through a MILP depends on how it is spelt: on the same
    MILP spelt two ways it took 2.4 s and 4.0 s (long dialogue, 1,001 candidates at 5%), and
    its random seed moves it as much. The race spells it plainly, as HiGHS alone is most likely
    given it, so that it follows HiGHS alone's path rather than a path of its own.
    """
    c = compiled
    weight = np.asarray(c.weight, dtype=np.float64)
    cost = np.asarray(c.cost, dtype=np.float64)
    indptr = np.asarray(c.indptr, dtype=np.int64)
    indices = np.asarray(c.indices, dtype=np.int64)
    values = np.asarray(c.values, dtype=np.float64)
    group_of = np.asarray(c.group_of, dtype=np.int64)
    limit = budget_limit(budget)
    capacity = int(c.group_capacity)

    # Coverage entries of affordable candidates on units of positive weight, by unit and,
    # within a unit, by candidate (a stable sort of the CSR order).
    owner = np.repeat(np.arange(cost.size, dtype=np.int64), np.diff(indptr))
    keep = weight[indices] > 0
    if not plain:
        keep &= (cost <= limit)[owner]
    order = np.argsort(indices[keep], kind="stable")
    e_u, e_r, e_a = owner[keep][order], indices[keep][order], values[keep][order]
    if plain:
        units = np.flatnonzero(weight > 0).astype(np.int64)
        unit_start = np.searchsorted(e_r, units, side="left")
        unit_len = np.searchsorted(e_r, units, side="right") - unit_start
        candidates = np.arange(cost.size, dtype=np.int64)
    else:
        units, unit_start, unit_len = np.unique(e_r, return_index=True, return_counts=True)
        candidates = np.unique(e_u)
    e_x = np.searchsorted(candidates, e_u)
    n_x, n_y = int(candidates.size), int(units.size)

    objective = np.concatenate([np.zeros(n_x), weight[units]])
    col_lower = np.zeros(n_x + n_y)
    col_upper = np.ones(n_x + n_y)

    # Z_r: the largest coverage of r with `capacity` candidates per group (exactly rounded).
    reach = _reach(e_r, group_of[e_u], e_a, units, capacity)
    piece_unit: list[int] = []
    alphas: list[float] = []
    betas: list[float] = []
    sat_of = np.asarray(c.saturation_of)[units].tolist()
    for k, (s, z) in enumerate(zip(sat_of, reach)):
        spec = c.saturations[s]
        if plain and spec.name != "log1p":  # h's own pieces and maximum, not those up to Z_r
            z = math.inf
        pieces = saturation_pieces(spec, z, log1p_mode=log1p_mode, breakpoints=breakpoints)
        col_upper[n_x + k] = pieces.cap
        piece_unit.extend([k] * len(pieces.alpha))
        alphas.extend(pieces.alpha)
        betas.extend(pieces.beta)

    # Piece rows: y_r - beta * sum_u a_ur x_u <= alpha, each row's entries y first.
    p_unit = np.asarray(piece_unit, dtype=np.int64)
    p_len = unit_len[p_unit] if p_unit.size else np.zeros(0, dtype=np.int64)
    row_len = 1 + p_len
    starts = np.concatenate([[0], np.cumsum(row_len)])
    total = int(starts[-1])
    is_y = np.zeros(total, dtype=bool)
    is_y[starts[:-1]] = True
    # Entry positions of each piece's unit, laid end to end (a ragged arange).
    offsets = np.cumsum(p_len) - p_len
    pos = np.arange(int(p_len.sum()), dtype=np.int64) - np.repeat(offsets, p_len) + np.repeat(unit_start[p_unit], p_len)
    index = np.empty(total, dtype=np.int64)
    value = np.empty(total, dtype=np.float64)
    index[is_y] = n_x + p_unit
    value[is_y] = 1.0
    index[~is_y] = e_x[pos]
    value[~is_y] = -np.repeat(np.asarray(betas, dtype=np.float64), p_len) * e_a[pos]
    index_parts, value_parts = [index], [value]
    lengths = [row_len]
    upper_parts = [np.asarray(alphas, dtype=np.float64)]

    # Group rows: groups holding more than `capacity` columns, in order of their first column.
    col_group = group_of[candidates]
    groups, first_col, size = np.unique(col_group, return_index=True, return_counts=True)
    big = np.flatnonzero(size > capacity)
    if big.size:
        big = big[np.argsort(first_col[big], kind="stable")]
        rank = np.full(groups.size, -1, dtype=np.int64)
        rank[big] = np.arange(big.size)
        col_rank = rank[np.searchsorted(groups, col_group)]
        cols = np.flatnonzero(col_rank >= 0)
        cols = cols[np.argsort(col_rank[cols], kind="stable")]  # by group, then by column
        index_parts.append(cols)
        value_parts.append(np.ones(cols.size))
        lengths.append(size[big])
        upper_parts.append(np.full(big.size, float(capacity)))

    costs = cost[candidates]
    if plain or math.fsum(costs.tolist()) > limit:
        index_parts.append(np.arange(n_x, dtype=np.int64))
        value_parts.append(costs)
        lengths.append(np.array([n_x], dtype=np.int64))
        upper_parts.append(np.array([limit]))

    all_lengths = np.concatenate(lengths).astype(np.int64)
    row_upper = np.concatenate(upper_parts).astype(np.float64)
    approximation = "exact"
    if any(c.saturations[s].name == "log1p" for s in set(sat_of)):
        approximation = log1p_mode
    return MilpModel(
        candidates=candidates.astype(np.int32),
        units=units.astype(np.int32),
        objective=objective.astype(np.float64),
        col_lower=col_lower,
        col_upper=col_upper,
        row_starts=np.concatenate([[0], np.cumsum(all_lengths)]).astype(np.int32),
        row_index=np.concatenate(index_parts).astype(np.int32),
        row_value=np.concatenate(value_parts).astype(np.float64),
        row_lower=np.full(row_upper.size, -math.inf),
        row_upper=row_upper,
        approximation=approximation,
    )


def _reach(e_r: np.ndarray, e_g: np.ndarray, e_a: np.ndarray, units: np.ndarray, capacity: int) -> list[float]:
    """Per unit of ``units``: the exactly rounded sum, over groups, of its ``capacity`` largest
    coverage amounts in the group (entries ``e_r, e_g, e_a``)."""
    if not units.size:
        return []
    srt = np.lexsort((e_a, e_g, e_r))  # by unit, group, then amount ascending
    r_s, g_s, a_s = e_r[srt], e_g[srt], e_a[srt]
    new_run = np.ones(r_s.size, dtype=bool)
    new_run[1:] = (r_s[1:] != r_s[:-1]) | (g_s[1:] != g_s[:-1])
    run_end = np.append(np.flatnonzero(new_run)[1:], r_s.size)
    from_end = run_end[np.cumsum(new_run) - 1] - 1 - np.arange(r_s.size)
    top = from_end < capacity
    kept_r, kept_a = r_s[top], a_s[top]
    bounds = np.searchsorted(kept_r, units).tolist() + [int(kept_r.size)]
    amounts = kept_a.tolist()
    return [math.fsum(amounts[s:e]) for s, e in itertools.pairwise(bounds)]


# --- Model files anyone can check ------------------------------------------------------------
#: Formats :func:`write_milp` writes, by file suffix (both read by CBC, SCIP, Gurobi, HiGHS).
MODEL_FORMATS = ("mps", "lp")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def lattice_floor(bound: float, granularity: float) -> float:
    """The lattice point of step ``granularity`` at or under ``bound``, with room for rounding
    (only upwards: a lattice point a hair above the bound is kept). 0.05 is not a binary
    fraction: 1297.5 / 0.05 rounds below 25950 and must still count."""
    return granularity * math.floor(bound / granularity + 1e-6)


def highs_of(model: MilpModel, *, names: bool = False) -> Any:
    """A quiet HiGHS instance holding ``model`` (maximised); ``names``: readable column and row
    names (``x<j>``, ``y<k>``, ``r<k>``), for the model files anyone can re-check."""
    import highspy

    class QuietHighs(highspy.Highs):
        # Output must be off before the callbacks start, or the banner goes to stdout.
        def enableCallbacks(self) -> None:
            self.setOptionValue("output_flag", False)
            super().enableCallbacks()

    h = QuietHighs()
    inf = highspy.kHighsInf
    n = model.num_cols
    empty_i = np.zeros(0, dtype=np.int32)
    if n:
        h.addCols(n, model.objective, model.col_lower, model.col_upper, 0, empty_i, empty_i, np.zeros(0))
    if model.num_x:
        h.changeColsIntegrality(
            model.num_x, np.arange(model.num_x, dtype=np.int32),
            np.array([highspy.HighsVarType.kInteger] * model.num_x),
        )
    if model.integral_y is not None and model.integral_y.any():
        cols = (model.num_x + np.flatnonzero(model.integral_y)).astype(np.int32)
        h.changeColsIntegrality(cols.size, cols, np.array([highspy.HighsVarType.kInteger] * cols.size))
    if model.num_rows:
        h.addRows(
            model.num_rows,
            np.where(np.isfinite(model.row_lower), model.row_lower, -inf),
            np.where(np.isfinite(model.row_upper), model.row_upper, inf),
            int(model.row_index.size), model.row_starts[:-1], model.row_index, model.row_value,
        )
    if names:
        for j in range(n):
            h.passColName(j, f"x{j}" if j < model.num_x else f"y{j - model.num_x}")
        for k in range(model.num_rows):
            h.passRowName(k, f"r{k}")
    h.changeObjectiveSense(highspy.ObjSense.kMaximize)
    return h


def write_milp(
    model: MilpModel, compiled: CompiledPackage, directory: str | Path, stem: str,
    formats: tuple[str, ...] = MODEL_FORMATS,
) -> dict[str, Any]:
    """Write ``model`` as ``DIR/STEM.mps`` (and ``.lp``) plus ``STEM.columns.json``.

    The model maximises; column ``x<j>`` is candidate ``columns.x[j]`` (binary) and ``y<k>``
    the saturated coverage of unit ``columns.y[k]``. Returns what a record says of the files:
    each path and its sha256. A model with no column (nothing can be stored, OPT = 0) is
    written as its columns file only, since MPS cannot hold an empty objective.
    """
    for fmt in formats:
        if fmt not in MODEL_FORMATS:
            raise CertificationError(f"unknown model format {fmt!r}; expected one of {MODEL_FORMATS}")
    out_dir = Path(directory)
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"--write-model {out_dir}: exists and is not a directory; give a directory")
    targets = [out_dir / f"{stem}.{fmt}" for fmt in formats] if model.num_cols else []
    for target in [*targets, out_dir / f"{stem}.columns.json"]:
        if target.exists() or target.is_symlink():
            # Never written over: it may be another run's (or the user's own) file.
            raise UsageError(f"--write-model {out_dir}: {target.name} exists already (an earlier run's?); "
                             "give a new or empty directory, or remove the file")
    out_dir.mkdir(parents=True, exist_ok=True)
    files = []
    if model.num_cols:
        import highspy

        h = highs_of(model, names=True)
        for fmt in formats:
            path = out_dir / f"{stem}.{fmt}"
            if h.writeModel(str(path)) != highspy.HighsStatus.kOk or not path.is_file():
                raise CertificationError(f"HiGHS could not write the model to {path}")
            files.append({"path": str(path), "format": fmt, "sha256": _sha256(path)})
    columns = out_dir / f"{stem}.columns.json"
    columns.write_text(json.dumps({
        "package_id": compiled.package_id, "sense": "maximize", "approximation": model.approximation,
        "x": [compiled.candidate_ids[int(u)] for u in model.candidates],
        "y": [compiled.unit_ids[int(r)] for r in model.units],
    }, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return {"files": files, "columns": {"path": str(columns), "sha256": _sha256(columns)},
            "sense": "maximize", "approximation": model.approximation}


def model_stem(package_id: str, budget: float, suffix: str = "") -> str:
    """A file-name stem for one (package, budget) model: safe characters only. An id changed to
    be safe gets a digest of itself (``a/b`` and ``a_b`` would share a name), and a budget that
    six digits do not spell exactly is written in full (1000000.5 is not 1e+06)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", package_id).strip("._") or "package"
    if safe != package_id:
        safe += "-" + hashlib.sha256(package_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    spelt = f"{budget:g}"
    if float(spelt) != budget:
        spelt = repr(float(budget))
    return f"{safe}__B{spelt}{suffix}"
