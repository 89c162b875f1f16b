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
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from .. import _core
from ..errors import PackageError, UsageError
from .estimates import group_capacity_of
from .io import load_package
from .package import OWN_GROUP, Package, SaturationSpec


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
    return _compiled(as_package(package), None)


def compile_validated(package: Package) -> CompiledPackage:
    """:func:`compile_package` of a package the caller validated just now and handed to no
    one (a batch worker's): the arrays and ids the fast validator built are the data's, so
    they are not compared with it, nor derived from it, again."""
    if package.arrays is None:
        return _compiled(package, None)
    try:
        return _compile_fresh(package)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:  # never expected
        raise _edited(package, exc) from None


def _read_only(values: Any, dtype: Any) -> np.ndarray:
    if type(values) is np.ndarray and not values.flags.writeable and values.dtype == dtype:
        return values  # the scanner's, read-only from the start
    array = np.asarray(values, dtype=dtype)
    array.flags.writeable = False  # views taken from it are read-only too
    return array


def _compile_fresh(pkg: Package) -> CompiledPackage:
    """The compiled package from the arrays a fast reader has just built (``Package.arrays``,
    see :mod:`.fastpath`): lists from the Python fast path, numpy arrays from the scanner."""
    a = pkg.arrays
    unit_ids = a["unit_ids"]
    unit_sats = pkg.unit_saturations
    first = unit_sats[0]
    if unit_sats.count(first) == len(unit_sats):  # the common case: one h
        sats = [first]
        saturation_of: Any = np.zeros(len(unit_ids), dtype=np.int32)
    else:
        sats = list(dict.fromkeys(unit_sats))
        sat_index = {spec: k for k, spec in enumerate(sats)}
        saturation_of = [sat_index[spec] for spec in unit_sats]
    cost = _read_only(a["cost"], np.float64)
    weight = _read_only(a.get("weight", pkg.unit_weights), np.float64)
    values = _read_only(a["values"], np.float64)
    times = _read_only(a.get("times", pkg.candidate_times), np.float64)
    group_of = _read_only(a["group_of"], np.int32)
    indices = _read_only(a["indices"], np.int32)
    sat_of = _read_only(saturation_of, np.int32)
    indptr = _read_only(a["indptr"], np.int64)
    group_ids = a["group_ids"]
    points = [_points(s) for s in sats]
    problem = _core.Problem(
        cost, group_of, len(group_ids), weight, indptr, indices, values, sat_of,
        [_core.SaturationKind.__members__[s.name] for s in sats], [p[0] for p in points], [p[1] for p in points],
    )
    candidate_ids, representations = a["candidate_ids"], a["representations"]
    names = {s.name for s in sats}
    return CompiledPackage(
        package=pkg,
        problem=problem,
        package_id=pkg.package_id,
        candidate_ids=candidate_ids,
        group_ids=group_ids,
        unit_ids=unit_ids,
        cost=cost,
        group_of=group_of,
        weight=weight,
        indptr=indptr,
        indices=indices,
        values=values,
        times=times,
        representations=representations,
        saturations=sats,
        saturation_of=sat_of,
        budgets=pkg.budgets,
        weights_rule=pkg.weights_rule,
        saturation_name=names.pop() if len(names) == 1 else "mixed",
        group_capacity=int(a["group_capacity"]),
    )


def _compiled(pkg: Package, checked: bool | None) -> CompiledPackage:
    try:
        compiled = _compile(pkg, checked)
    except PackageError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise _edited(pkg, exc) from None
    for array in (compiled.cost, compiled.group_of, compiled.weight, compiled.indptr, compiled.indices,
                  compiled.values, compiled.times, compiled.saturation_of):
        array.flags.writeable = False  # the core holds its own copy: writing here would change nothing
    if compiled.cost.base is not None:
        compiled.cost.base.flags.writeable = False  # the array the float views share
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


def _arrays_still_hold(pkg: Package) -> bool:
    """True when the fast validator's arrays still match ``data`` (nobody edited costs or
    coverage since): a few C-level list comparisons, far cheaper than building them again."""
    if pkg.arrays is None:
        return False
    a = pkg.arrays
    costs, raw_values = _as_list(a["cost"]), _as_list(a["raw_values"])
    unit_ids = a["unit_ids"]
    candidates = pkg.candidates
    try:
        covs = [c["coverage"] for c in candidates]
        return bool(len(costs) == len(candidates)
                    and [c["cost"] for c in candidates] == costs
                    and list(chain.from_iterable(covs)) == [unit_ids[k] for k in _as_list(a["raw_units"])]
                    and list(chain.from_iterable(map(dict.values, covs))) == raw_values)
    except (KeyError, TypeError):  # a record or its coverage is no longer an object
        return False


def _as_list(values: Any) -> list[Any]:
    return values.tolist() if isinstance(values, np.ndarray) else values


def _points(spec: SaturationSpec) -> tuple[np.ndarray, np.ndarray]:
    """The PWL points of a saturation as arrays (shared: specs are immutable, the core copies)."""
    arrays = _POINTS.get(spec)
    if arrays is None:
        xs = np.array([p[0] for p in spec.points], dtype=np.float64)
        ys = np.array([p[1] for p in spec.points], dtype=np.float64)
        xs.flags.writeable = ys.flags.writeable = False
        arrays = (xs, ys)
        if len(_POINTS) < 1024:  # the named ones and a few PWL ones; never unbounded
            _POINTS[spec] = arrays
    return arrays


_POINTS: dict[SaturationSpec, tuple[np.ndarray, np.ndarray]] = {}


def _compile(pkg: Package, checked: bool | None = None) -> CompiledPackage:
    if (len(pkg.candidate_groups) != len(pkg.candidates) or len(pkg.candidate_times) != len(pkg.candidates)
            or len(pkg.unit_weights) != len(pkg.units) or len(pkg.unit_saturations) != len(pkg.units)):
        raise ValueError("candidates or units were added or removed")
    units = pkg.units
    candidates = pkg.candidates

    # Groups numbered in order of first appearance (dict keeps insertion order).
    group_index = {key: g for g, key in enumerate(dict.fromkeys(pkg.candidate_groups))}
    group_ids = [key.removeprefix(OWN_GROUP) if key.startswith(OWN_GROUP) else key for key in group_index]
    group_of = np.array([group_index[key] for key in pkg.candidate_groups], dtype=np.int32)

    if checked is None:
        checked = _arrays_still_hold(pkg)
    if checked:  # built by the fast validator in the same pass, from the data as it still is
        a = pkg.arrays
        cost_list, idx, vals = _as_list(a["cost"]), _as_list(a["indices"]), _as_list(a["values"])
        indptr = np.array(a["indptr"], dtype=np.int64)
    else:
        unit_index = {u["unit_id"]: r for r, u in enumerate(units)}
        cost_list = [float(c["cost"]) for c in candidates]
        indptr = np.zeros(len(candidates) + 1, dtype=np.int64)
        idx = []
        vals = []
        for i, cand in enumerate(candidates):
            for unit_id, value in cand["coverage"].items():
                if value > 0:
                    idx.append(unit_index[unit_id])
                    vals.append(float(value))
            indptr[i + 1] = len(idx)

    unit_sats = pkg.unit_saturations
    if unit_sats and all(spec is unit_sats[0] for spec in unit_sats):  # the common case: one h
        sats = [unit_sats[0]]
        saturation_of = np.zeros(len(units), dtype=np.int32)
    else:
        sats = list(dict.fromkeys(unit_sats))
        sat_index = {spec: k for k, spec in enumerate(sats)}
        saturation_of = np.array([sat_index[spec] for spec in unit_sats], dtype=np.int32)

    # One array for every per-candidate and per-unit float, as views: numpy's cost per call,
    # not the copying, is what counts at the size of a package.
    n, m, nnz = len(cost_list), len(units), len(vals)
    floats = np.array([*cost_list, *pkg.unit_weights, *vals, *pkg.candidate_times], dtype=np.float64)
    cost, weight = floats[:n], floats[n:n + m]
    values, times = floats[n + m:n + m + nnz], floats[n + m + nnz:]
    indices = np.array(idx, dtype=np.int32)
    if not checked and not (np.all(np.isfinite(cost)) and np.all(cost >= 0) and np.all(np.isfinite(values))):
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
        [_points(s)[0] for s in sats],
        [_points(s)[1] for s in sats],
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
        times=times,
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
        # As many digits as tell them apart (3.000000001 is not "3").
        shown, limit = f"{cost:g}", f"{budget:g}"
        if float(shown) <= budget or shown == limit:
            shown, limit = repr(cost), repr(float(budget))
        problems.append(f"cost {shown} exceeds the budget {limit}")
    return problems
