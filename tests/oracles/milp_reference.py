"""A plain, loop-by-loop builder of the package MILP, kept to test the product's array builder."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from memaudit_fast.model.compiled import budget_limit
from memaudit_fast.solve.milp import MilpModel, saturation_pieces


def build_milp_reference(
    compiled: Any, budget: float, *, log1p_mode: str = "inner", breakpoints: int = 32
) -> MilpModel:
    """The MILP one unit and one candidate at a time, as first written: the reference that
    :func:`memaudit_fast.solve.milp.build_milp` must equal array for array."""
    c = compiled
    weight = c.weight
    limit = budget_limit(budget)
    affordable = c.cost <= limit
    covered_by: dict[int, list[tuple[int, float]]] = {}
    for u in map(int, np.flatnonzero(affordable)):
        for e in range(int(c.indptr[u]), int(c.indptr[u + 1])):
            r = int(c.indices[e])
            if weight[r] > 0:
                covered_by.setdefault(r, []).append((u, float(c.values[e])))
    units = sorted(covered_by)
    x_of: dict[int, int] = {}
    for r in units:
        for u, _ in covered_by[r]:
            x_of.setdefault(u, 0)
    candidates = sorted(x_of)
    for j, u in enumerate(candidates):
        x_of[u] = j
    n_x, n_y = len(candidates), len(units)

    objective = np.concatenate([np.zeros(n_x), weight[units] if units else np.zeros(0)])
    col_lower = np.zeros(n_x + n_y)
    col_upper = np.ones(n_x + n_y)

    starts = [0]
    index: list[int] = []
    value: list[float] = []
    lower: list[float] = []
    upper: list[float] = []

    def add_row(cols: list[int], coefs: list[float], lo: float, hi: float) -> None:
        index.extend(cols)
        value.extend(coefs)
        starts.append(len(index))
        lower.append(lo)
        upper.append(hi)

    capacity = int(c.group_capacity)
    for k, r in enumerate(units):
        # Largest coverage of r with `capacity` candidates per group: the model's reach of z_r.
        in_group: dict[int, list[float]] = {}
        for u, a in covered_by[r]:
            in_group.setdefault(int(c.group_of[u]), []).append(a)
        reach = math.fsum(a for amounts in in_group.values() for a in sorted(amounts)[-capacity:])
        pieces = saturation_pieces(
            c.saturations[int(c.saturation_of[r])], reach, log1p_mode=log1p_mode, breakpoints=breakpoints
        )
        col_upper[n_x + k] = pieces.cap
        x_cols = [x_of[u] for u, _ in covered_by[r]]
        coverage = [a for _, a in covered_by[r]]
        for alpha, beta in zip(pieces.alpha, pieces.beta):
            # y_r - beta * sum_u a_ur x_u <= alpha
            add_row([n_x + k, *x_cols], [1.0, *(-beta * a for a in coverage)], -math.inf, alpha)

    members: dict[int, list[int]] = {}
    for j, u in enumerate(candidates):
        members.setdefault(int(c.group_of[u]), []).append(j)
    for cols in members.values():
        if len(cols) > capacity:
            add_row(cols, [1.0] * len(cols), -math.inf, float(capacity))

    costs = [float(c.cost[u]) for u in candidates]
    if math.fsum(costs) > limit:
        add_row(list(range(n_x)), costs, -math.inf, limit)

    approximation = "exact"
    if any(c.saturations[int(c.saturation_of[r])].name == "log1p" for r in units):
        approximation = log1p_mode
    return MilpModel(
        candidates=np.array(candidates, dtype=np.int32),
        units=np.array(units, dtype=np.int32),
        objective=objective.astype(np.float64),
        col_lower=col_lower,
        col_upper=col_upper,
        row_starts=np.array(starts, dtype=np.int32),
        row_index=np.array(index, dtype=np.int32),
        row_value=np.array(value, dtype=np.float64),
        row_lower=np.array(lower, dtype=np.float64),
        row_upper=np.array(upper, dtype=np.float64),
        approximation=approximation,
    )
