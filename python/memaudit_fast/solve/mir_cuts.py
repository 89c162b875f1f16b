"""c-MIR cuts for the root LP (solve/root_lp.py), separated by the core (cpp/include/memaudit/mir_cuts.hpp).

Two kinds of rows go to the separator:

- the LP's own rows that hold a unit's ``y`` (coverage rows and the coverage cuts added so far)
  where some candidate is fractional: their c-MIR cuts are single-unit cuts that the coverage
  families miss (a partial cover measured from its upper bound);
- rows of the simplex tableau of the fractional candidates: a row ``lambda`` of the basis
  inverse combines the rows ``A v + s = b`` (s >= 0 the slacks) into
  ``(lambda A) v + lambda s = lambda b``, an equality at every point whatever ``lambda`` is,
  so rounding ``lambda`` costs nothing. Over the columns and the slacks, its c-MIR cut is the
  Gomory mixed-integer cut, made stronger where the columns lie on a lattice; the slacks are
  then written back as ``b - A v``. These cuts span several units.

Columns on a lattice: every candidate's x (step 1), a ``y`` counted in steps of its unit's
lattice (:func:`.milp.on_unit_lattice`: each store's best ``y`` is such a multiple), and the
slack of a row whose entries, in those steps, and right side are whole numbers once the row is
divided by 1 or by its own ``y``'s step (the coverage rows of such units, the group rows, a
budget row of whole costs). A cut holds at every point of the LP's rows with its lattice
columns on their lattices: at each store with its best ``y``, so the LP stays a bound on OPT.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _core
from .milp import MilpModel, on_unit_lattice

#: Tableau rows separated per round at the most (the fractional candidates nearest 1/2 first):
#: each costs a row of the basis inverse and its product with the rows.
MIR_TABLEAU_ROWS = 100

#: A cut is kept when the LP point lies at least this far from it (efficacy).
MIR_MIN_EFFICACY = 1e-5

#: Coefficients under this share of a cut's largest are dropped, and the right side takes what
#: they could add; a cut's right side is raised by this share of its scale (floating point).
MIR_TINY = 1e-9


def lattice_steps(model: MilpModel) -> np.ndarray:
    """Each column's lattice step: 1 for every x, the unit's step for a ``y`` that
    :func:`.milp.on_unit_lattice` counts in steps, 0 (continuous) for the others."""
    steps = np.zeros(model.num_cols)
    steps[:model.num_x] = 1.0
    lattice = on_unit_lattice(model)
    if lattice.integral_y is not None:
        ys = model.num_x + np.flatnonzero(lattice.integral_y)
        steps[ys] = lattice.objective[ys] / model.objective[ys]  # y = s Y, the objective w s
    return steps


def slack_steps(row_of: np.ndarray, col: np.ndarray, value: np.ndarray, upper: np.ndarray,
                steps: np.ndarray, num_x: int) -> np.ndarray:
    """Each row's slack lattice step (0: continuous), for rows given entry by entry."""
    num_rows = upper.size
    in_steps = value * np.where(steps[col] > 0, steps[col], np.nan)  # entries in lattice units
    own = np.zeros(num_rows)
    is_y = (col >= num_x) & (steps[col] > 0)
    own[row_of[is_y]] = steps[col[is_y]]
    out = np.zeros(num_rows)
    safe_own = np.where(own > 0, own, 1.0)
    for divide in (np.ones(num_rows), np.where(own > 0, safe_own, 0.0)):
        d = np.where(divide > 0, 1.0 / np.where(divide > 0, divide, 1.0), 0.0)
        scaled = in_steps * d[row_of]
        off = ~np.isfinite(scaled) | (np.abs(scaled - np.round(scaled)) > 1e-9)
        bad = np.bincount(row_of[off], minlength=num_rows) > 0
        ok = ~bad & (d > 0) & np.isfinite(upper) & (np.abs(upper * d - np.round(upper * d)) <= 1e-9)
        out = np.where((out == 0) & ok, divide, out)
    return out


def separate_mir_cuts(rows: Any, steps: np.ndarray, point: np.ndarray,
                      tableau_rows: int | None = None) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """The c-MIR cuts of the root LP ``rows`` (an :class:`.root_lp.LpRows` whose HiGHS holds the
    optimal basis at ``point``, its column values) over their columns, each as (columns,
    coefficients, right side) of ``coefficients . v <= right side``, most efficacious first;
    from ``tableau_rows`` tableau rows at the most (None: MIR_TABLEAU_ROWS)."""
    model, h = rows.model, rows.highs
    rows._join()
    row_of, col, value, upper = rows.entry_rows[0], rows.entry_cols[0], rows.entry_vals[0], rows.uppers[0]
    n, m, num_x = model.num_cols, rows.num_rows, model.num_x
    lower, col_upper = model.col_lower, rows.col_upper
    # Entries come row by row (the model's rows, then each block of cuts).
    row_starts = np.searchsorted(row_of, np.arange(m + 1)).astype(np.int64)
    row_cols = col.astype(np.int32)

    def times_rows(lam: np.ndarray) -> np.ndarray:  # lam A, one row per row of lam (in the core)
        return _core.rows_times(row_starts, row_cols, value, n, lam)

    fractional = (point[:num_x] > 1e-6) & (point[:num_x] < 1.0 - 1e-6)
    if not fractional.any():
        return []
    # The rows holding a y with a fractional candidate.
    has_y = np.zeros(m, dtype=bool)
    has_y[row_of[col >= num_x]] = True
    has_frac = np.zeros(m, dtype=bool)
    at_x = col < num_x
    has_frac[row_of[at_x][fractional[col[at_x]]]] = True
    own_rows = np.flatnonzero(has_y & has_frac)
    own = np.flatnonzero((has_y & has_frac)[row_of])  # their entries, in order
    own_starts = np.concatenate([[0], np.cumsum(np.diff(row_starts)[own_rows])]).astype(np.int64)
    batches = [(own_starts, col[own].astype(np.int32), value[own], upper[own_rows])]
    # Tableau rows over the columns and the slacks (columns n + k), the fractional candidates
    # nearest 1/2 first.
    slack = np.maximum(0.0, upper - np.bincount(row_of, weights=value * point[col], minlength=m))
    slack_step = slack_steps(row_of, col, value, upper, steps, num_x)
    basic = np.asarray(h.getBasicVariables()[1])
    position = np.flatnonzero((basic >= 0) & (basic < num_x))
    position = position[fractional[basic[position]]]
    position = position[np.argsort(np.abs(point[basic[position]] - 0.5), kind="stable")][:MIR_TABLEAU_ROWS if tableau_rows is None else tableau_rows]
    lams = np.array([h.getBasisInverseRow(int(i))[1] for i in position.tolist()], dtype=np.float64).reshape(-1, m)
    lams[np.abs(lams) < 1e-12] = 0.0  # any lambda gives an equality: rounding it is free
    rhos = times_rows(lams)  # all of the round's rows in one call
    pivots = rhos[np.arange(position.size), basic[position]]
    usable = np.abs(pivots) > 1e-9
    lams, rhos = lams[usable] / pivots[usable, None], rhos[usable] / pivots[usable, None]
    tab_rhs = np.array([float(lam @ upper) for lam in lams])  # row by row: one matrix product may sum otherwise
    # Entries left by rounding (|rho_j| < MIR_TINY) go, the right side taking the most each
    # could add over its bounds (the row as <=).
    tiny = (np.abs(rhos) < MIR_TINY) & (rhos != 0)
    for t in np.flatnonzero(tiny.any(axis=1)).tolist():
        rho, gone = rhos[t], tiny[t]
        tab_rhs[t] += float(np.sum(np.maximum(np.maximum(-rho[gone] * lower[gone], -rho[gone] * col_upper[gone]), 0.0)))
        rho[gone] = 0.0
    # Each row's columns, then its slacks (columns n + k).
    tableau = np.hstack([rhos, lams])
    which, where = np.nonzero(tableau)
    cuts: list[tuple[float, np.ndarray, np.ndarray, float]] = []
    lo = np.concatenate([lower, np.zeros(m)])
    hi = np.concatenate([col_upper, np.full(m, math.inf)])
    step = np.concatenate([steps, slack_step])
    at = np.concatenate([point, slack])
    if tab_rhs.size:
        batches.append((np.concatenate([[0], np.cumsum(np.bincount(which, minlength=tab_rhs.size))]).astype(np.int64),
                        where.astype(np.int32), tableau[which, where], tab_rhs))
    for kind, (b_starts, b_cols, b_vals, b_rhs) in enumerate(batches):
        if b_rhs.size == 0:
            continue
        c_starts, c_cols, c_vals, c_rhs, c_eff, _ = _core.mir_cuts(
            b_starts, b_cols, b_vals, b_rhs, lo, hi, step, at, MIR_MIN_EFFICACY)
        if kind == 1 and c_rhs.size:
            # Slacks back to b - A v: each cut's slack part times the rows, all cuts in one call.
            multipliers = np.zeros((c_rhs.size, m))
            cut_of = np.repeat(np.arange(c_rhs.size), np.diff(c_starts))
            on_slack_all = c_cols >= n
            multipliers[cut_of[on_slack_all], c_cols[on_slack_all].astype(np.int64) - n] = c_vals[on_slack_all]
            through_rows = times_rows(multipliers)
        for k in range(c_rhs.size):
            cols_k = c_cols[c_starts[k]:c_starts[k + 1]].astype(np.int64)
            vals_k = c_vals[c_starts[k]:c_starts[k + 1]]
            if kind == 0:
                cuts.append((float(c_eff[k]), cols_k, vals_k, float(c_rhs[k])))
                continue
            on_slack = cols_k >= n
            g = np.zeros(n)
            g[cols_k[~on_slack]] = vals_k[~on_slack]
            g_s = vals_k[on_slack]
            s_rows = cols_k[on_slack] - n
            g -= through_rows[k]
            made = _safe_cut(g, float(c_rhs[k]) - float(g_s @ upper[s_rows]), point, lower, col_upper)
            if made is not None:
                cuts.append(made)
    cuts.sort(key=lambda cut: -cut[0])
    return [(cols_k, vals_k, rhs) for _, cols_k, vals_k, rhs in cuts]


def _safe_cut(g: np.ndarray, rhs: float, point: np.ndarray, lower: np.ndarray,
              upper: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, float] | None:
    """``g . v <= rhs`` with coefficients under MIR_TINY of the largest dropped (the right side
    takes the most each could add over its bounds) and the right side raised for floating
    point; with its efficacy at ``point``, None where it is not efficacious."""
    largest = float(np.max(np.abs(g))) if g.size else 0.0
    if not largest > 0.0 or not math.isfinite(rhs):
        return None
    tiny = (np.abs(g) < MIR_TINY * largest) & (g != 0)
    if tiny.any():
        most = np.maximum(-g[tiny] * lower[tiny], -g[tiny] * upper[tiny])
        rhs += float(np.sum(np.maximum(most, 0.0)))
        g = np.where(tiny, 0.0, g)
    cols = np.flatnonzero(g)
    vals = g[cols]
    if cols.size == 0 or float(np.max(np.abs(vals))) > 1e6 * float(np.min(np.abs(vals))):
        return None
    reach = np.maximum(np.abs(lower[cols]), np.abs(upper[cols]))
    rhs += MIR_TINY * (abs(rhs) + float(np.abs(vals) @ reach)) + 1e-12
    efficacy = (float(vals @ point[cols]) - rhs) / float(np.linalg.norm(vals))
    if not efficacy > MIR_MIN_EFFICACY:
        return None
    return efficacy, cols, vals, rhs
