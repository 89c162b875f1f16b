"""Slow plain-Python references for tests: the baseline writers' rules and a brute-force OPT.

The writers follow MISSION.md section 4 straight from the package dict, with gains computed
term by term in the same floating-point order as the C++ core (so a selection can be
compared id for id, ties included).
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence
from typing import Any

from memaudit_fast.model.package import Package

EPS = 1e-12
TOMBSTONE = {"tombstone", "update", "compound_update"}


def h_core(sat: Any, value: float) -> float:
    """h evaluated with the same formula (and rounding) as the C++ core."""
    if sat.name == "cap1":
        return min(1.0, value)
    if sat.name == "linear":
        return value
    if sat.name == "log1p":
        return math.log1p(value)
    zs = [p[0] for p in sat.points]
    hs = [p[1] for p in sat.points]
    if value >= zs[-1]:
        return hs[-1]
    k = bisect.bisect_right(zs, value)
    if k == 0:
        return 0.0
    slope = (hs[k] - hs[k - 1]) / (zs[k] - zs[k - 1])
    return hs[k - 1] + slope * (value - zs[k - 1])


class RefPackage:
    """The dict view the references work on (package order kept)."""

    def __init__(self, pkg: Package) -> None:
        self.pkg = pkg
        self.ids = [c["candidate_id"] for c in pkg.candidates]
        self.cost = [float(c["cost"]) for c in pkg.candidates]
        self.rep = [str(c.get("representation", "")) for c in pkg.candidates]
        self.group = list(pkg.candidate_groups)
        self.time = list(pkg.candidate_times)
        unit_pos = {u["unit_id"]: r for r, u in enumerate(pkg.units)}
        self.cov = [[(unit_pos[k], float(v)) for k, v in c["coverage"].items() if v > 0] for c in pkg.candidates]
        self.weight = list(pkg.unit_weights)
        self.sat = list(pkg.unit_saturations)

    def unit_value(self, r: int, z: float) -> float:
        return self.weight[r] * h_core(self.sat[r], z)

    def gain(self, z: dict[int, float], i: int) -> float:
        g = 0.0
        for r, a in self.cov[i]:
            before = z.get(r, 0.0)
            g += self.unit_value(r, before + a) - self.unit_value(r, before)
        return g

    def add(self, z: dict[int, float], i: int) -> None:
        for r, a in self.cov[i]:
            z[r] = z.get(r, 0.0) + a

    def value(self, selected: Sequence[int]) -> float:
        z: dict[int, float] = {}
        for i in selected:
            self.add(z, i)
        return sum(self.unit_value(r, v) for r, v in z.items())

    def admitted(self, keep: set[str] | None = None, drop: set[str] = frozenset()) -> list[int]:
        return [i for i in range(len(self.ids)) if (keep is None or self.rep[i] in keep) and self.rep[i] not in drop]

    def ordered_groups(self, cands: list[int]) -> list[list[int]]:
        groups: dict[str, list[int]] = {}
        for i in cands:
            groups.setdefault(self.group[i], []).append(i)

        def shown(g: str) -> str:
            return g.removeprefix("\x00own:")

        keys = sorted(groups, key=lambda g: (min(self.time[i] for i in groups[g]), shown(g)))
        return [sorted(groups[g], key=lambda i: (self.cost[i], self.ids[i])) for g in keys]


def density(gain: float, cost: float) -> float:
    return gain / max(cost, 1e-12)


def _gain_if_fits(p: RefPackage, z: dict[int, float], i: int, used: float, budget: float) -> float | None:
    """The marginal gain of candidate ``i`` when it fits the budget and gains more than EPS."""
    if used + p.cost[i] > budget:
        return None
    g = p.gain(z, i)
    return g if g > EPS else None


def _densest(p: RefPackage, z: dict[int, float], pool: Sequence[int], used: float, budget: float) -> int | None:
    """The candidate of ``pool`` that fits with the best (density, gain, -cost, id), if any gains."""
    best = None
    for i in pool:
        g = _gain_if_fits(p, z, i, used, budget)
        if g is None:
            continue
        key = (density(g, p.cost[i]), g, -p.cost[i], p.ids[i])
        if best is None or key > best[0]:
            best = (key, i)
    return None if best is None else best[1]


def ref_density_only(p: RefPackage, budget: float) -> list[str]:
    z: dict[int, float] = {}
    used = 0.0
    out: list[int] = []
    for group in p.ordered_groups(p.admitted()):
        i = _densest(p, z, group, used, budget)
        if i is not None:
            out.append(i)
            used += p.cost[i]
            p.add(z, i)
    return [p.ids[i] for i in out]


def ref_greedy(p: RefPackage, budget: float, keep: set[str] | None = None, drop: set[str] = frozenset()) -> list[str]:
    cands = p.admitted(keep, drop)
    z: dict[int, float] = {}
    used = 0.0
    groups: set[str] = set()
    out: list[int] = []
    while True:
        i = _densest(p, z, [i for i in cands if p.group[i] not in groups], used, budget)
        if i is None:
            return [p.ids[i] for i in out]
        out.append(i)
        groups.add(p.group[i])
        used += p.cost[i]
        p.add(z, i)


def ref_gvt(p: RefPackage, budget: float, drop: set[str] = frozenset()) -> list[str]:
    cands = p.admitted(None, drop)
    thresholds = sorted({density(p.gain({}, i), p.cost[i]) for i in cands if p.cost[i] <= budget} | {0.0}, reverse=True)
    best_ids: list[int] = []
    best_value, best_cost = -1.0, 0.0
    for t in thresholds:
        z: dict[int, float] = {}
        used = 0.0
        chosen: list[int] = []
        for group in p.ordered_groups(cands):
            admissible = []
            for i in group:
                g = _gain_if_fits(p, z, i, used, budget)
                if g is not None and density(g, p.cost[i]) + EPS >= t:
                    admissible.append((g, -p.cost[i], p.ids[i], i))
            if admissible:
                i = max(admissible)[3]
                chosen.append(i)
                used += p.cost[i]
                p.add(z, i)
        value = p.value(chosen)
        if value > best_value + EPS or (abs(value - best_value) <= EPS and used < best_cost):
            best_ids, best_value, best_cost = chosen, value, used
    return [p.ids[i] for i in best_ids]


def ref_recency_raw(p: RefPackage, budget: float) -> list[str]:
    pool = sorted(p.admitted({"raw", "raw_span"}), key=lambda i: (-p.time[i], p.cost[i], p.ids[i]))
    used, groups, out = 0.0, set(), []
    for i in pool:
        if p.group[i] in groups or used + p.cost[i] > budget:
            continue
        out.append(p.ids[i])
        groups.add(p.group[i])
        used += p.cost[i]
    return out


def reference_store(pkg: Package, budget: float, writer: str) -> list[str]:
    p = RefPackage(pkg)
    # What fits B, as package-format.md says: a cost sum of at most B + 1e-12 * max(1, B).
    budget = budget + 1e-12 * max(1.0, budget)
    table = {
        "density_only": lambda: ref_density_only(p, budget),
        "greedy": lambda: ref_greedy(p, budget),
        "gvt": lambda: ref_gvt(p, budget),
        "recency_raw": lambda: ref_recency_raw(p, budget),
        "fact_only": lambda: ref_greedy(p, budget, keep={"fact", "atomic_fact"}),
        "summary_only": lambda: ref_greedy(p, budget, keep={"summary"}),
        "raw_only": lambda: ref_greedy(p, budget, keep={"raw", "raw_span"}),
        "no_tombstone_greedy": lambda: ref_greedy(p, budget, drop=TOMBSTONE),
        "no_tombstone_gvt": lambda: ref_gvt(p, budget, drop=TOMBSTONE),
    }
    return table[writer]()


def brute_force(pkg: Package, budget: float, *, drop: set[str] = frozenset()) -> tuple[float, list[str]]:
    """OPT(B) and one optimal store, by trying every choice of at most one per group."""
    p = RefPackage(pkg)
    groups: dict[str, list[int]] = {}
    for i in p.admitted(None, drop):
        groups.setdefault(p.group[i], []).append(i)
    best_value, best = 0.0, []
    for choice in itertools.product(*[[None, *g] for g in groups.values()]):
        chosen = [i for i in choice if i is not None]
        if math.fsum(p.cost[i] for i in chosen) > budget:
            continue
        value = p.value(chosen)
        if value > best_value:
            best_value, best = value, chosen
    return best_value, [p.ids[i] for i in best]


def is_feasible(pkg: Package, ids: Sequence[str], budget: float) -> bool:
    p = RefPackage(pkg)
    index = {cid: i for i, cid in enumerate(p.ids)}
    chosen = [index[c] for c in ids]
    groups = [p.group[i] for i in chosen]
    return len(set(chosen)) == len(chosen) and len(set(groups)) == len(groups) and math.fsum(p.cost[i] for i in chosen) <= budget


# --- A stand-in for memaudit_fast.solve.exact while it does not exist --------------------------
def install_brute_force_solver(monkeypatch) -> bool:
    """Make ``memaudit_fast.solve.exact.solve`` available: the real one, or brute force.

    Returns True when the real solver is used.
    """
    import importlib.util
    import sys
    import types
    from dataclasses import dataclass

    if importlib.util.find_spec("memaudit_fast.solve.exact") is not None:
        return True

    from memaudit_fast.model.compiled import compile_package

    @dataclass(frozen=True)
    class FakeResult:
        package_id: str
        budget: float
        saturation: str
        weights_rule: str
        value: float
        selected: tuple
        cost: float
        status: str = "optimal"
        proven_optimal: bool = True
        nodes: int = 0
        seconds: float = 0.0

        @property
        def upper_bound(self) -> float:
            return self.value

        @property
        def gap(self) -> float:
            return 0.0

        def to_record(self) -> dict:
            return {"format": "memaudit.result/1", "package_id": self.package_id, "budget": self.budget,
                    "saturation": self.saturation, "weights_rule": self.weights_rule, "opt": self.value,
                    "upper_bound": self.value, "status": self.status, "proven_optimal": True,
                    "selected": list(self.selected), "cost": self.cost, "nodes": 0, "seconds": 0.0}

    def solve(package, budget=None, *, budgets=None, time_limit=None, node_limit=None):
        c = compile_package(package)
        many = budgets is not None
        out = []
        for b in (budgets if many else [budget]):
            value, ids = brute_force(c.package, float(b))
            index = c.index_of()
            out.append(FakeResult(c.package_id, float(b), c.saturation_name, c.weights_rule, value, tuple(ids),
                                  math.fsum(float(c.cost[index[i]]) for i in ids)))
        return out if many else out[0]

    module = types.ModuleType("memaudit_fast.solve.exact")
    module.solve = solve
    monkeypatch.setitem(sys.modules, "memaudit_fast.solve.exact", module)
    return False


def random_package(n_candidates: int, *, seed: int = 0, saturation: Any = "cap1", per_group: int = 4,
                   n_units: int | None = None) -> dict:
    """A random package for benchmarks: groups of ~per_group candidates arriving over time,
    costs 1-8, each candidate covering 1-4 units at 0.25-1.0."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n_units = n_units or max(4, n_candidates // 3)
    n_groups = max(1, n_candidates // per_group)
    reps = ["raw_span", "fact", "summary", "update", "tombstone"]
    cands = []
    for i in range(n_candidates):
        units = rng.choice(n_units, size=int(rng.integers(1, 5)), replace=False)
        cands.append({
            "candidate_id": f"c{i:05d}", "experience_id": f"e{int(rng.integers(n_groups)):05d}",
            "representation": reps[int(rng.integers(len(reps)))], "cost": int(rng.integers(1, 9)),
            "coverage": {f"u{int(r)}": float(rng.choice([0.25, 0.5, 0.75, 1.0])) for r in units},
        })
    return {
        "format": "memaudit.package/1", "package_id": f"bench/{n_candidates}/{seed}",
        "objective": {"saturation": saturation},
        "experiences": [{"experience_id": f"e{g:05d}", "timestamp": g} for g in range(n_groups)],
        "units": [{"unit_id": f"u{r}", "weight": float(rng.choice([0.5, 1.0, 2.0, 3.0]))} for r in range(n_units)],
        "candidates": cands,
    }
