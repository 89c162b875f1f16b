"""A validated package as the contiguous arrays the C++ core works on.

Candidates keep the package's order (index i is ``candidates[i]``). Groups are numbered in
order of first appearance, units in package order. Coverage is CSR with one row per
candidate: ``indices[indptr[i]:indptr[i+1]]`` are the units candidate i covers, ``values``
the amounts a[i, r]. Zero coverage entries are dropped here (they never change F); the
package itself keeps them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import _core
from ..errors import PackageError, UsageError
from .estimates import group_capacity_of
from .io import load_package
from .package import Package, SaturationSpec


@dataclass(frozen=True)
class CompiledPackage:
    """Arrays of one package plus the ids needed to translate results back."""

    package: Package
    problem: Any  # _core.Problem
    package_id: str
    candidate_ids: list[str]
    group_ids: list[str]
    unit_ids: list[str]
    cost: np.ndarray  # float64, per candidate
    group_of: np.ndarray  # int32, per candidate
    weight: np.ndarray  # float64, per unit
    indptr: np.ndarray  # int64, num_candidates + 1
    indices: np.ndarray  # int32, per non-zero
    values: np.ndarray  # float64, per non-zero
    times: np.ndarray  # float64, per candidate: arrival time (experience timestamp)
    representations: list[str]
    saturations: list[SaturationSpec]
    saturation_of: np.ndarray  # int32, per unit
    budgets: list[float]
    weights_rule: str
    saturation_name: str
    group_capacity: int = 1  # candidates a group may hold (objective.group_capacity)

    @property
    def num_candidates(self) -> int:
        return len(self.candidate_ids)

    def index_of(self) -> dict[str, int]:
        return {cid: i for i, cid in enumerate(self.candidate_ids)}

    def objective(self, selected: Any) -> float:
        """F(X) for candidate indices X."""
        return float(self.problem.objective(np.asarray(selected, dtype=np.int32)))

    def __repr__(self) -> str:
        return (f"CompiledPackage({self.package_id!r}, candidates={self.num_candidates}, "
                f"groups={len(self.group_ids)}, units={len(self.unit_ids)}, nonzeros={len(self.values)}, "
                f"budgets={self.budgets}, saturation={self.saturation_name!r})")


def as_package(package: Package | dict[str, Any] | str | Path) -> Package:
    if isinstance(package, Package):
        return package
    if isinstance(package, dict):
        return Package.from_dict(package)
    return load_package(package)


def compile_package(package: Package | CompiledPackage | dict[str, Any] | str | Path) -> CompiledPackage:
    """Compile a package (or a dict / path to one) into core arrays (read-only numpy arrays).

    A package whose ``data`` was edited after validation is validated again when it no longer
    compiles, so the PackageError names the field at fault.
    """
    if isinstance(package, CompiledPackage):
        return package
    pkg = as_package(package)
    try:
        compiled = _compile(pkg)
    except PackageError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise _edited(pkg, exc) from None
    for array in (compiled.cost, compiled.group_of, compiled.weight, compiled.indptr, compiled.indices,
                  compiled.values, compiled.times, compiled.saturation_of):
        array.flags.writeable = False  # the core holds its own copy: writing here would change nothing
    return compiled


def _edited(pkg: Package, exc: BaseException) -> PackageError:
    """The error for a package whose data no longer matches what was validated."""
    Package.from_dict(pkg.data, source=pkg.source)  # raises the validator's own PackageError
    return PackageError(
        f"the package's data was changed after it was validated ({type(exc).__name__}: {exc}); "
        "validate it again with Package.from_dict(package.data) before solving",
        package_id=str(pkg.data.get("package_id")) if isinstance(pkg.data, dict) else None,
        source=pkg.source,
    )


def _compile(pkg: Package) -> CompiledPackage:
    if (len(pkg.candidate_groups) != len(pkg.candidates) or len(pkg.candidate_times) != len(pkg.candidates)
            or len(pkg.unit_weights) != len(pkg.units) or len(pkg.unit_saturations) != len(pkg.units)):
        raise ValueError("candidates or units were added or removed")
    units = pkg.units
    candidates = pkg.candidates
    unit_index = {u["unit_id"]: r for r, u in enumerate(units)}

    group_index: dict[str, int] = {}
    group_ids: list[str] = []
    group_of = np.empty(len(candidates), dtype=np.int32)
    for i, key in enumerate(pkg.candidate_groups):
        if key not in group_index:
            group_index[key] = len(group_ids)
            group_ids.append(key.removeprefix("\x00own:"))
        group_of[i] = group_index[key]

    indptr = np.zeros(len(candidates) + 1, dtype=np.int64)
    idx: list[int] = []
    vals: list[float] = []
    for i, cand in enumerate(candidates):
        for unit_id, value in cand["coverage"].items():
            if value > 0:
                idx.append(unit_index[unit_id])
                vals.append(float(value))
        indptr[i + 1] = len(idx)

    sats: list[SaturationSpec] = []
    sat_index: dict[SaturationSpec, int] = {}
    saturation_of = np.empty(len(units), dtype=np.int32)
    for r, spec in enumerate(pkg.unit_saturations):
        if spec not in sat_index:
            sat_index[spec] = len(sats)
            sats.append(spec)
        saturation_of[r] = sat_index[spec]

    cost = np.array([float(c["cost"]) for c in candidates], dtype=np.float64)
    weight = np.array(pkg.unit_weights, dtype=np.float64)
    indices = np.array(idx, dtype=np.int32)
    values = np.array(vals, dtype=np.float64)
    if not (np.all(np.isfinite(cost)) and np.all(cost >= 0) and np.all(np.isfinite(values))):
        raise ValueError("a cost or coverage value is no longer a finite number >= 0")
    problem = _core.Problem(
        cost,
        group_of,
        len(group_ids),
        weight,
        indptr,
        indices,
        values,
        saturation_of,
        [_core.SaturationKind.__members__[s.name] for s in sats],
        [np.array([p[0] for p in s.points], dtype=np.float64) for s in sats],
        [np.array([p[1] for p in s.points], dtype=np.float64) for s in sats],
    )
    return CompiledPackage(
        package=pkg,
        problem=problem,
        package_id=pkg.package_id,
        candidate_ids=[c["candidate_id"] for c in candidates],
        group_ids=group_ids,
        unit_ids=[u["unit_id"] for u in units],
        cost=cost,
        group_of=group_of,
        weight=weight,
        indptr=indptr,
        indices=indices,
        values=values,
        times=np.array(pkg.candidate_times, dtype=np.float64),
        representations=[str(c.get("representation", "")) for c in candidates],
        saturations=sats,
        saturation_of=saturation_of,
        budgets=pkg.budgets,
        weights_rule=pkg.weights_rule,
        saturation_name=pkg.saturation_name,
        group_capacity=group_capacity_of(pkg.data),
    )


#: A store fits when its cost sum is at most ``B + COST_SLACK * max(1, B)``: the exact
#: solver's rule, which absorbs rounding in float cost sums (0.1 + 0.2 > 0.3). The value is
#: the core's own constant, so Python and C++ cannot disagree on what fits.
COST_SLACK: float = float(_core.COST_SLACK)


def check_budget(value: Any, name: str = "budget") -> float:
    """One budget as a float: a finite number >= 0 (Python or numpy scalar, not a bool).

    Every entry point that takes a budget (solve, writers, score, certify, batch) checks it
    here, so that the rule and its message are the same everywhere.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise UsageError(f"{name} must be a number, got {value!r}")
    b = float(value)
    if not math.isfinite(b) or b < 0:
        raise UsageError(f"{name} must be finite and >= 0, got {value!r}")
    return b


def check_budgets(values: Any, name: str = "budgets") -> list[float]:
    """A list of budgets: one number, or any sequence / numpy array of numbers."""
    if isinstance(values, np.ndarray):
        if values.ndim > 1:
            raise UsageError(f"{name} must be one number or a flat list of numbers, got an array of shape {values.shape}")
        values = values.tolist() if values.ndim == 1 else values.item()
    if isinstance(values, (str, bytes)) or values is None:
        raise UsageError(f"{name} must be numbers, got {values!r}")
    if not hasattr(values, "__iter__"):
        return [check_budget(values, name)]
    return [check_budget(b, name) for b in values]


def budget_limit(budget: float) -> float:
    """The largest cost sum that still fits budget B."""
    return budget + COST_SLACK * max(1.0, abs(budget))


def _indices(c: CompiledPackage, ids: Sequence[str]) -> tuple[list[int], list[str]]:
    index = c.index_of()
    unknown = [s for s in ids if s not in index]
    return [index[s] for s in ids if s in index], unknown


def store_problems(c: CompiledPackage, ids: Sequence[str], budget: float) -> list[str]:
    """Why a store is infeasible (empty when it is feasible). Unknown ids are reported too.

    The cost rule is the exact solver's: ``sum c_u <= B + 1e-12 * max(1, B)``.
    """
    chosen, unknown = _indices(c, ids)
    problems = []
    if unknown:
        problems.append("unknown candidate ids: " + ", ".join(repr(s) for s in unknown))
    seen: dict[str, int] = {}
    for s in ids:
        seen[s] = seen.get(s, 0) + 1
    twice = [s for s, k in seen.items() if k > 1]
    if twice:
        problems.append("listed more than once: " + ", ".join(repr(s) for s in twice))
    by_group: dict[int, list[str]] = {}
    for i in dict.fromkeys(chosen):
        by_group.setdefault(int(c.group_of[i]), []).append(c.candidate_ids[i])
    for g, members in by_group.items():
        if len(members) > c.group_capacity:
            allowed = "one is" if c.group_capacity == 1 else f"{c.group_capacity} are"
            problems.append(
                f"group {c.group_ids[g]!r} holds {len(members)} candidates ({', '.join(members)}); at most {allowed} allowed"
            )
    cost = math.fsum(float(c.cost[i]) for i in chosen)
    if cost > budget_limit(budget):
        problems.append(f"cost {cost:g} exceeds the budget {budget:g}")
    return problems
