"""Independent references for the exact solver, used only by tests and benchmarks.

* ``Instance``: a package as plain arrays (the layout ``_core.Problem`` takes), with a random
  generator covering every saturation family, ties, zero costs and zero weights.
* ``objective`` / ``brute_force``: F(X) in plain Python and OPT(B) by enumerating one choice
  (or none) per group.
* ``milp_optimum``: the MILP of the MEMAUDIT paper solved by HiGHS,

      max sum_r w_r y_r
      s.t. y_r <= alpha_k + beta_k * sum_u a[u,r] x_u   (one row per linear piece of h_r)
           y_r <= h_r(cap)                               (the cap, when h_r has one)
           sum_{u in G} x_u <= 1 per group,  sum_u c_u x_u <= B,  x binary,

  exact for cap1, linear and piecewise-linear h (log1p has no finite PWL form).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memaudit_fast import _core

CAP1, LINEAR, LOG1P, PWL = 0, 1, 2, 3
# A budget fits when the cost sum is at most B + BUDGET_SLACK * max(1, B) (the solver's rule).
BUDGET_SLACK = 1e-12


@dataclass
class Instance:
    cost: np.ndarray
    group_of: np.ndarray
    num_groups: int
    weight: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    saturation_of: np.ndarray
    kinds: list[int]
    zs: list[np.ndarray] = field(default_factory=list)
    hs: list[np.ndarray] = field(default_factory=list)

    @property
    def num_candidates(self) -> int:
        return len(self.cost)

    def problem(self) -> _core.Problem:
        return _core.Problem(
            self.cost, self.group_of, self.num_groups, self.weight, self.indptr, self.indices,
            self.values, self.saturation_of, self.kinds, self.zs, self.hs,
        )

    def row(self, u: int) -> list[tuple[int, float]]:
        lo, hi = int(self.indptr[u]), int(self.indptr[u + 1])
        return [(int(r), float(a)) for r, a in zip(self.indices[lo:hi], self.values[lo:hi])]


def h_value(inst: Instance, unit: int, z: float) -> float:
    s = int(inst.saturation_of[unit])
    kind = inst.kinds[s]
    if kind == CAP1:
        return min(1.0, z)
    if kind == LINEAR:
        return z
    if kind == LOG1P:
        return math.log1p(z)
    zs, hs = inst.zs[s], inst.hs[s]
    if z >= zs[-1]:
        return float(hs[-1])
    k = int(np.searchsorted(zs, z, side="right"))
    return float(hs[k - 1] + (hs[k] - hs[k - 1]) * (z - zs[k - 1]) / (zs[k] - zs[k - 1]))


def objective(inst: Instance, selected: Sequence[int]) -> float:
    z = [0.0] * len(inst.weight)
    for u in selected:
        for r, a in inst.row(u):
            z[r] += a
    return sum(float(w) * h_value(inst, r, z[r]) for r, w in enumerate(inst.weight) if z[r] > 0)


def fits(cost: float, budget: float) -> bool:
    return cost <= budget + BUDGET_SLACK * max(1.0, budget)


def is_feasible(inst: Instance, selected: Sequence[int], budget: float) -> bool:
    groups = [int(inst.group_of[u]) for u in selected]
    return len(set(groups)) == len(groups) and fits(float(sum(inst.cost[u] for u in selected)), budget)


def brute_force(inst: Instance, budget: float) -> tuple[float, list[int]]:
    """OPT(B) and one optimal store, by enumerating one choice (or none) per group."""
    members: list[list[int | None]] = [[None] for _ in range(inst.num_groups)]
    for u in range(inst.num_candidates):
        if fits(float(inst.cost[u]), budget):
            members[int(inst.group_of[u])].append(u)
    best, best_store = 0.0, []
    for choice in itertools.product(*members):
        store = [u for u in choice if u is not None]
        if fits(float(sum(inst.cost[u] for u in store)), budget):
            value = objective(inst, store)
            if value > best:
                best, best_store = value, store
    return best, best_store


def random_instance(
    rng: np.random.Generator,
    n_candidates: int,
    n_groups: int,
    n_units: int,
    *,
    saturation: str = "cap1",
    density: float = 0.3,
    integer_costs: bool = True,
    max_cost: int = 6,
    coverage_levels: Sequence[float] = (0.25, 0.5, 1.0),
    weight_levels: Sequence[float] = (0.0, 1.0, 1.0, 2.0, 3.5),
) -> Instance:
    """A random package; ``saturation`` is cap1, linear, log1p, pwl or mixed (per unit)."""
    group_of = np.sort(rng.integers(0, n_groups, n_candidates)).astype(np.int32)
    if integer_costs:
        cost = rng.integers(0, max_cost + 1, n_candidates).astype(np.float64)
    else:
        cost = np.round(rng.uniform(0, max_cost, n_candidates), 3)
    indptr = [0]
    indices: list[int] = []
    values: list[float] = []
    for _ in range(n_candidates):
        row = sorted(int(r) for r in np.flatnonzero(rng.random(n_units) < density))
        indices += row
        values += [float(rng.choice(coverage_levels)) for _ in row]
        indptr.append(len(indices))
    weight = rng.choice(np.asarray(weight_levels, dtype=np.float64), n_units)
    kinds, zs, hs = saturation_table()
    names = ["cap1", "linear", "log1p", "pwl"]
    if saturation == "mixed":
        saturation_of = rng.integers(0, 4, n_units).astype(np.int32)
    else:
        saturation_of = np.full(n_units, names.index(saturation), dtype=np.int32)
    return Instance(
        cost=cost, group_of=group_of, num_groups=n_groups, weight=weight,
        indptr=np.asarray(indptr, dtype=np.int64), indices=np.asarray(indices, dtype=np.int32),
        values=np.asarray(values, dtype=np.float64), saturation_of=saturation_of,
        kinds=kinds, zs=zs, hs=hs,
    )


def saturation_table() -> tuple[list[int], list[np.ndarray], list[np.ndarray]]:
    """Saturations 0..3: cap1, linear, log1p and a concave three-piece PWL."""
    empty = np.zeros(0)
    pwl_z = np.array([0.0, 0.5, 1.5, 3.0])
    pwl_h = np.array([0.0, 0.8, 1.3, 1.5])
    return [CAP1, LINEAR, LOG1P, PWL], [empty, empty, empty, pwl_z], [empty, empty, empty, pwl_h]


def _pieces(inst: Instance, unit: int) -> tuple[list[tuple[float, float]], float | None]:
    """Lines (alpha, beta) with h(z) = min_k alpha + beta z on [0, cap], and h(cap)."""
    s = int(inst.saturation_of[unit])
    kind = inst.kinds[s]
    if kind == CAP1:
        return [(0.0, 1.0)], 1.0
    if kind == LINEAR:
        return [(0.0, 1.0)], None
    if kind == LOG1P:
        raise ValueError("log1p has no exact piecewise-linear MILP")
    zs, hs = inst.zs[s], inst.hs[s]
    lines = []
    for k in range(1, len(zs)):
        beta = (hs[k] - hs[k - 1]) / (zs[k] - zs[k - 1])
        lines.append((float(hs[k - 1] - beta * zs[k - 1]), float(beta)))
    return lines, float(hs[-1])


def milp_model(inst: Instance, budget: float):  # type: ignore[no-untyped-def]
    """The HiGHS model of OPT(B) (variables x_0..x_{n-1}, then y_r for units with w_r > 0)."""
    import highspy

    n = inst.num_candidates
    units = [r for r in range(len(inst.weight)) if inst.weight[r] > 0]
    col_of = {r: n + k for k, r in enumerate(units)}
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", 0.0)
    h.setOptionValue("mip_abs_gap", 0.0)
    h.setOptionValue("threads", 1)
    inf = highspy.kHighsInf
    for _ in range(n):
        h.addVar(0.0, 1.0)
    for r in units:
        _, cap_value = _pieces(inst, r)
        h.addVar(0.0, inf if cap_value is None else cap_value)
    h.changeColsIntegrality(n, np.arange(n, dtype=np.int32), np.full(n, highspy.HighsVarType.kInteger))
    h.changeColsCost(
        len(units), np.array([col_of[r] for r in units], dtype=np.int32),
        np.array([inst.weight[r] for r in units], dtype=np.float64),
    )
    h.changeObjectiveSense(highspy.ObjSense.kMaximize)
    covering: dict[int, list[tuple[int, float]]] = {r: [] for r in units}
    for u in range(n):
        for r, a in inst.row(u):
            if r in covering:
                covering[r].append((u, a))
    for r in units:
        lines, _ = _pieces(inst, r)
        for alpha, beta in lines:
            # y_r - beta * sum_u a x_u <= alpha
            idx = [col_of[r]] + [u for u, _ in covering[r]]
            val = [1.0] + [-beta * a for _, a in covering[r]]
            h.addRow(-inf, alpha, len(idx), np.array(idx, dtype=np.int32), np.array(val))
    for g in range(inst.num_groups):
        members = np.flatnonzero(inst.group_of == g).astype(np.int32)
        if len(members) > 1:
            h.addRow(-inf, 1.0, len(members), members, np.ones(len(members)))
    h.addRow(-inf, budget, n, np.arange(n, dtype=np.int32), inst.cost.astype(np.float64))
    return h


def milp_optimum(inst: Instance, budget: float, time_limit: float | None = None) -> tuple[str, float, float]:
    """(HiGHS model status, objective value, dual bound) of the MILP."""
    h = milp_model(inst, budget)
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    info = h.getInfo()
    return status, float(info.objective_function_value), float(info.mip_dual_bound)


def instance_of(compiled: Any) -> Instance:
    """The arrays of a compiled min(1, z) package (``memaudit_fast.model.compiled``), for the
    MILP reference and the brute force here."""
    kinds, zs, hs = saturation_table()
    assert all(s.name == "cap1" for s in compiled.saturations), "the MILP reference handles cap1 packages here"
    return Instance(
        cost=compiled.cost, group_of=compiled.group_of, num_groups=len(compiled.group_ids), weight=compiled.weight,
        indptr=compiled.indptr, indices=compiled.indices, values=compiled.values,
        saturation_of=np.zeros(len(compiled.weight), dtype=np.int32), kinds=kinds, zs=zs, hs=hs,
    )


def package_from_instance(inst: Instance, name: str) -> dict:
    """The package dict of synthetic arrays (cap1), so the product's solve() takes it."""
    units = [{"unit_id": f"r{r}", "weight": float(w)} for r, w in enumerate(inst.weight)]
    candidates = []
    for u in range(inst.num_candidates):
        lo, hi = int(inst.indptr[u]), int(inst.indptr[u + 1])
        candidates.append({
            "candidate_id": f"c{u}", "experience_id": f"e{int(inst.group_of[u])}", "representation": "fact",
            "cost": float(inst.cost[u]),
            "coverage": {f"r{int(r)}": float(a) for r, a in zip(inst.indices[lo:hi], inst.values[lo:hi])},
        })
    return {"format": "memaudit.package/1", "package_id": name, "budgets": [1.0],
            "objective": {"saturation": "cap1"}, "units": units, "candidates": candidates}


SYNTHETIC_KINDS = ("memaudit", "tie_heavy", "redundant", "dense")


def synthetic_instance(n_candidates: int, seed: int, kind: str = "memaudit") -> Instance:
    """A package shaped like MEMAUDIT's: experiences (groups) with several representations.

    ``memaudit``: per experience a raw turn (expensive, covers all its units fully), one or two
    facts (cheap, one unit each), a summary (half coverage of several units) and sometimes a
    tombstone/update (covers an invalidation unit). Units recur across experiences (entities
    come back), so stores overlap and the objective is genuinely submodular. Weights 1-3.
    ``tie_heavy``: the same shape with integer costs 1-3, every weight 1 and coverage 1, so a
    great many stores tie. ``redundant``: integer costs, weights 1, and most experiences
    repeat an earlier one exactly (the same facts retold), so whole groups are
    interchangeable. ``dense``: each candidate covers 8-30 units at coverage 0.25-0.5.
    """
    if kind == "redundant":
        return _redundant_instance(n_candidates, seed)
    rng = np.random.default_rng(seed)
    n_groups = max(1, n_candidates // 4)
    n_units = max(2, int(0.9 * n_groups))
    tie = kind == "tie_heavy"
    rows: list[list[tuple[int, float]]] = []
    costs: list[float] = []
    groups: list[int] = []
    # Zipf-like recurrence: a few units (salient entities) come back often.
    popularity = 1.0 / np.arange(1, n_units + 1) ** 0.6
    popularity /= popularity.sum()
    g = 0
    while len(costs) < n_candidates:
        k = int(rng.integers(1, 4))
        units = sorted({int(r) for r in rng.choice(n_units, size=k, p=popularity)})
        reps: list[tuple[float, list[tuple[int, float]]]] = []
        if kind == "dense":
            for _ in range(int(rng.integers(2, 6))):
                m = int(rng.integers(8, 31))
                cov = sorted({int(r) for r in rng.choice(n_units, size=m, p=popularity)})
                reps.append((float(rng.integers(2, 30)), [(r, float(rng.choice([0.25, 0.5]))) for r in cov]))
        else:
            raw_cost = float(rng.integers(2, 4)) if tie else float(rng.integers(12, 40))
            context = [int(r) for r in rng.choice(n_units, size=int(rng.integers(0, 3)), p=popularity)]
            raw_units = sorted(set(units) | set(context))
            reps.append((raw_cost, [(r, 1.0 if tie or r in units else 0.5) for r in raw_units]))
            for r in units[: int(rng.integers(1, 3))]:
                reps.append((float(rng.integers(1, 3)) if tie else float(rng.integers(3, 9)), [(r, 1.0)]))
            if len(units) > 1:
                reps.append((float(rng.integers(1, 4)) if tie else float(rng.integers(6, 16)),
                             [(r, 1.0 if tie else 0.5) for r in units]))
            if rng.random() < 0.3:
                r = int(rng.integers(0, n_units))
                reps.append((1.0 if tie else float(rng.integers(2, 6)), [(r, 1.0)]))
        _add_group(reps, g, n_candidates, costs, groups, rows)
        g += 1
    indptr = np.zeros(n_candidates + 1, dtype=np.int64)
    indices: list[int] = []
    values: list[float] = []
    for u, row in enumerate(rows):
        merged: dict[int, float] = {}
        for r, a in row:
            merged[r] = merged.get(r, 0.0) + a
        for r in sorted(merged):
            indices.append(r)
            values.append(merged[r])
        indptr[u + 1] = len(indices)
    weight = np.ones(n_units) if tie else rng.integers(1, 4, n_units).astype(np.float64)
    kinds, zs, hs = saturation_table()
    return Instance(
        cost=np.asarray(costs), group_of=np.asarray(groups, dtype=np.int32), num_groups=g,
        weight=weight, indptr=indptr, indices=np.asarray(indices, dtype=np.int32),
        values=np.asarray(values), saturation_of=np.zeros(n_units, dtype=np.int32),
        kinds=kinds, zs=zs, hs=hs,
    )


def _add_group(reps: list[tuple[float, list[tuple[int, float]]]], g: int, n_candidates: int,
               costs: list[float], groups: list[int], rows: list[list[tuple[int, float]]]) -> None:
    """Append one group's representations (cost, coverage row), stopping at ``n_candidates``."""
    for cost, row in reps:
        if len(costs) == n_candidates:
            break
        costs.append(cost)
        groups.append(g)
        rows.append(row)


def _redundant_instance(n_candidates: int, seed: int) -> Instance:
    rng = np.random.default_rng(seed)
    n_units = max(4, n_candidates // 10)
    rows: list[list[tuple[int, float]]] = []
    costs: list[float] = []
    groups: list[int] = []
    templates: list[list[tuple[float, list[tuple[int, float]]]]] = []
    g = 0
    while len(costs) < n_candidates:
        if templates and rng.random() < 0.7:
            reps = templates[int(rng.integers(len(templates)))]
        else:
            units = sorted({int(r) for r in rng.choice(n_units, size=int(rng.integers(2, 5)), replace=False)})
            reps = [(float(len(units) - 1 + int(rng.integers(0, 2))), [(r, 1.0) for r in units])]
            reps += [(1.0, [(r, 1.0)]) for r in units[:2]]
            reps.append((2.0, [(r, 0.5) for r in units]))
            templates.append(reps)
        _add_group(reps, g, n_candidates, costs, groups, rows)
        g += 1
    indptr = np.zeros(n_candidates + 1, dtype=np.int64)
    indices = [r for row in rows for r, _ in row]
    values = [a for row in rows for _, a in row]
    indptr[1:] = np.cumsum([len(row) for row in rows])
    kinds, zs, hs = saturation_table()
    return Instance(
        cost=np.asarray(costs), group_of=np.asarray(groups, dtype=np.int32), num_groups=g,
        weight=np.ones(n_units), indptr=indptr, indices=np.asarray(indices, dtype=np.int32),
        values=np.asarray(values, dtype=np.float64), saturation_of=np.zeros(n_units, dtype=np.int32),
        kinds=kinds, zs=zs, hs=hs,
    )


def mid_size(seed: int, family: str) -> tuple[Instance, float]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(50, 200))
    inst = random_instance(rng, n, n // 3, int(rng.integers(10, 60)), saturation="cap1" if family == "mixed" else family,
                           density=0.08, max_cost=10)
    if family == "mixed":
        inst.saturation_of = rng.choice([CAP1, LINEAR, PWL], len(inst.weight)).astype(np.int32)
    return inst, float(rng.integers(5, 40))


MID_SIZE_CASES = [(seed, family) for seed in range(3) for family in ("cap1", "linear", "pwl", "mixed")]


def all_stores(compiled: Any, budget: float) -> list[tuple[tuple[int, ...], float]]:
    """Every feasible store of a compiled package with its worth, by brute force (group
    capacity and the budget rule of the solver)."""
    from memaudit_fast.model.compiled import budget_limit

    groups: dict[int, list[int]] = {}
    for u in range(compiled.num_candidates):
        groups.setdefault(int(compiled.group_of[u]), []).append(u)
    capacity = int(compiled.group_capacity)
    per_group = [[c for k in range(capacity + 1) for c in itertools.combinations(members, k)]
                 for members in groups.values()]
    stores = []
    for choice in itertools.product(*per_group):
        store = tuple(sorted(u for part in choice for u in part))
        if sum(float(compiled.cost[u]) for u in store) <= budget_limit(budget):
            stores.append((store, float(compiled.objective(list(store)))))
    return stores
