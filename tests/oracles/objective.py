"""Plain-Python reference of the objective, used only by tests."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from memaudit_fast.systems.diagnostics import Optimum


def h_value(sat: Any, z: float) -> float:
    if sat == "cap1":
        return min(1.0, z)
    if sat == "linear":
        return z
    if sat == "log1p":
        return math.log1p(z)
    points = sat["pwl"]
    if z >= points[-1][0]:
        return float(points[-1][1])
    for (z0, h0), (z1, h1) in itertools.pairwise(points):
        if z0 <= z < z1:
            return h0 + (h1 - h0) * (z - z0) / (z1 - z0)
    return 0.0


def unit_weights(data: dict) -> list[float]:
    units = data["units"]
    if units and "weight" in units[0]:
        return [float(u["weight"]) for u in units]
    demand = {u["unit_id"]: 0.0 for u in units}
    for q in data.get("queries", []):
        for r in q["required_unit_ids"]:
            demand[r] += 1
    return [demand[u["unit_id"]] for u in units]


def objective(data: dict, selected_ids: Sequence[str]) -> float:
    """F(X) straight from the package dict."""
    default = (data.get("objective") or {}).get("saturation", "cap1")
    cands = {c["candidate_id"]: c for c in data["candidates"]}
    z: dict[str, float] = {}
    for cid in selected_ids:
        for r, a in cands[cid]["coverage"].items():
            z[r] = z.get(r, 0.0) + a
    total = 0.0
    for unit, w in zip(data["units"], unit_weights(data)):
        total += w * h_value(unit.get("saturation", default), z.get(unit["unit_id"], 0.0))
    return total


def brute_solver(data: dict[str, Any], budgets: list[float], time_limit: float | None) -> list[Optimum]:
    """OPT by enumeration, on the plain-Python objective (independent of the C++ core)."""
    cands = data["candidates"]
    groups = [c.get("group", c.get("experience_id", c["candidate_id"])) for c in cands]
    out = []
    for budget in budgets:
        best: tuple[float, tuple[int, ...]] = (0.0, ())
        for r in range(len(cands) + 1):
            for combo in itertools.combinations(range(len(cands)), r):
                if sum(cands[i]["cost"] for i in combo) > budget:
                    continue
                if len({groups[i] for i in combo}) != len(combo):
                    continue
                value = objective(data, [cands[i]["candidate_id"] for i in combo])
                if value > best[0] + 1e-12:
                    best = (value, combo)
        ids = [cands[i]["candidate_id"] for i in best[1]]
        out.append(Optimum(best[0], best[0], "optimal", True, ids, float(sum(cands[i]["cost"] for i in best[1]))))
    return out
