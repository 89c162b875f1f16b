"""A plain-Python branch-and-bound in the style of the MEMAUDIT artifact's exact solver.

Depth-first over groups in a fixed order; at each group, one child per candidate that fits
the remaining budget plus "skip the group". Bound: ``F(S) + sum over the remaining groups of
the best single-candidate marginal gain F(u | S)`` among those that fit, i.e. gains treated
as additive (no knapsack relaxation, no saturation relaxation). The incumbent starts from
density greedy. It is the baseline the C++ solver's speed is measured against, not a tool.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass
class ReferenceOutcome:
    status: str  # "optimal" or "time_limit"
    value: float
    selected: list[int]
    nodes: int
    seconds: float


def _h(kind: int, z: float, zs: Any, hs: Any) -> float:
    if kind == 0:
        return min(1.0, z)
    if kind == 1:
        return z
    if kind == 2:
        return math.log1p(z)
    if z >= zs[-1]:
        return float(hs[-1])
    k = int(np.searchsorted(zs, z, side="right"))
    return float(hs[k - 1] + (hs[k] - hs[k - 1]) * (z - zs[k - 1]) / (zs[k] - zs[k - 1]))


def solve_reference(inst: Any, budget: float, time_limit: float = 60.0) -> ReferenceOutcome:
    """Exact OPT(B) of an ``Instance`` (:mod:`oracles.exact`), or the incumbent at the time limit."""
    start = time.perf_counter()
    n = inst.num_candidates
    rows = [inst.row(u) for u in range(n)]
    weight = [float(w) for w in inst.weight]
    kind = [inst.kinds[s] for s in inst.saturation_of]
    table = [(inst.zs[s], inst.hs[s]) for s in inst.saturation_of]
    cost = [float(c) for c in inst.cost]
    members: list[list[int]] = [[] for _ in range(inst.num_groups)]
    for u in range(n):
        members[int(inst.group_of[u])].append(u)
    groups = [m for m in members if m]
    z = [0.0] * len(weight)

    def unit(r: int, v: float) -> float:
        return weight[r] * _h(kind[r], v, *table[r])

    def gain(u: int) -> float:
        return sum(unit(r, z[r] + a) - unit(r, z[r]) for r, a in rows[u])

    def add(u: int, sign: float) -> None:
        for r, a in rows[u]:
            z[r] += sign * a

    # Density greedy for the first incumbent.
    chosen: list[int] = []
    used: set[int] = set()
    spent = 0.0
    while True:
        best, best_key = -1, 0.0
        for u in range(n):
            g = int(inst.group_of[u])
            if g in used or spent + cost[u] > budget:
                continue
            gu = gain(u)
            key = gu / max(cost[u], 1e-12)
            if gu > 1e-12 and key > best_key:
                best, best_key = u, key
        if best < 0:
            break
        chosen.append(best)
        used.add(int(inst.group_of[best]))
        spent += cost[best]
        add(best, 1.0)
    incumbent = list(chosen)
    incumbent_value = sum(unit(r, z[r]) for r in range(len(weight)) if z[r] > 0)
    for u in chosen:
        add(u, -1.0)
    z = [0.0] * len(weight)

    nodes = 0
    stopped = False
    store: list[int] = []

    def dfs(depth: int, value: float, room: float) -> None:
        nonlocal nodes, incumbent, incumbent_value, stopped
        nodes += 1
        if nodes % 1024 == 0 and time.perf_counter() - start > time_limit:
            stopped = True
        if stopped:
            return
        if value > incumbent_value:
            incumbent, incumbent_value = list(store), value
        bound = value
        for members_g in groups[depth:]:
            bound += max((gain(u) for u in members_g if cost[u] <= room), default=0.0)
        if bound <= incumbent_value + 1e-9 * max(1.0, abs(incumbent_value)) or depth == len(groups):
            return
        for u in groups[depth]:
            if cost[u] <= room:
                g = gain(u)
                if g <= 0:
                    continue
                add(u, 1.0)
                store.append(u)
                dfs(depth + 1, value + g, room - cost[u])
                store.pop()
                add(u, -1.0)
        dfs(depth + 1, value, room)

    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * len(groups) + 100))
    try:
        dfs(0, 0.0, budget)
    finally:
        sys.setrecursionlimit(limit)
    return ReferenceOutcome(
        status="time_limit" if stopped else "optimal",
        value=incumbent_value,
        selected=sorted(incumbent),
        nodes=nodes,
        seconds=time.perf_counter() - start,
    )
