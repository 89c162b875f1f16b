"""A validated package as the contiguous arrays the C++ core works on.

Candidates keep the package's order (index i is ``candidates[i]``). Groups are numbered in
order of first appearance, units in package order. Coverage is CSR with one row per
candidate: ``indices[indptr[i]:indptr[i+1]]`` are the units candidate i covers, ``values``
the amounts a[i, r]. Zero coverage entries are dropped here (they never change F); the
package itself keeps them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from . import _core
from .package import Package, SaturationSpec, load_package

_KIND = {"cap1": 0, "linear": 1, "log1p": 2, "pwl": 3}


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

    @property
    def num_candidates(self) -> int:
        return len(self.candidate_ids)

    def index_of(self) -> dict[str, int]:
        return {cid: i for i, cid in enumerate(self.candidate_ids)}

    def objective(self, selected: Any) -> float:
        """F(X) for candidate indices X."""
        return float(self.problem.objective(np.asarray(selected, dtype=np.int32)))


def as_package(package: Package | dict[str, Any] | str | Path) -> Package:
    if isinstance(package, Package):
        return package
    if isinstance(package, dict):
        return Package.from_dict(package)
    return load_package(package)


def compile_package(package: Package | CompiledPackage | dict[str, Any] | str | Path) -> CompiledPackage:
    """Compile a package (or a dict / path to one) into core arrays."""
    if isinstance(package, CompiledPackage):
        return package
    pkg = as_package(package)
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
    problem = _core.Problem(
        cost,
        group_of,
        len(group_ids),
        weight,
        indptr,
        indices,
        values,
        saturation_of,
        [_KIND[s.name] for s in sats],
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
    )
