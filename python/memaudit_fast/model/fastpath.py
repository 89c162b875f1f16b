"""The fast path of package validation.

msgspec checks every type in one C pass (:class:`_Schema`); the cross-references are set
operations; the coverage arrays for :func:`.compiled.compile_package` are built in the same
pass. It answers only "valid" (with the same fields the careful validator would build) or
"look closer" (``None``): any doubt goes to :class:`.validate._Validator`, which finds and
words every error. Text is read first by the core's scanner (:func:`scanned_package`), which
checks and builds the same in C++ without Python objects per value.

Both fill ``Package.arrays`` with the compiled form, a dict of ``cost``, ``indptr``,
``indices``, ``values`` (coverage CSR without zero entries), ``raw_units`` / ``raw_values``
(every coverage entry, zeros too, in the package's order), ``group_of``, ``candidate_ids``,
``representations``, ``group_ids`` and ``unit_ids``: lists from the Python path, numpy
arrays (and lists of ids) from the scanner, which adds ``weight`` and ``times`` arrays.
"""

from __future__ import annotations

import math
from itertools import accumulate, chain
from typing import Annotated, Any, Literal, Union

import msgspec

from .. import _core
from .jsonio import MAX_EXACT_INT, _fast_encode
from .limits import Limits
from .spec import OWN_GROUP, SATURATIONS, SaturationSpec, _default_locator
from .validate import _Full, _Stop, _Validator

_Id = Annotated[str, msgspec.Meta(min_length=1)]
_Finite = Annotated[float, msgspec.Meta(ge=-1.7976931348623157e308, le=1.7976931348623157e308)]
_NonNeg = Union[Annotated[int, msgspec.Meta(ge=0, le=MAX_EXACT_INT)],  # noqa: UP007 - a runtime type
                Annotated[float, msgspec.Meta(ge=0, le=1.7976931348623157e308)]]
_Real = Union[Annotated[int, msgspec.Meta(ge=-MAX_EXACT_INT, le=MAX_EXACT_INT)], _Finite]  # noqa: UP007


class _Experience(msgspec.Struct):
    experience_id: _Id
    timestamp: _Real | msgspec.UnsetType = msgspec.UNSET


class _Unit(msgspec.Struct):
    unit_id: _Id
    weight: _NonNeg | msgspec.UnsetType = msgspec.UNSET
    saturation: Any = msgspec.UNSET
    text: str | msgspec.UnsetType = msgspec.UNSET
    kind: str | msgspec.UnsetType = msgspec.UNSET
    state: str | msgspec.UnsetType = msgspec.UNSET


class _Candidate(msgspec.Struct):
    candidate_id: _Id
    cost: _NonNeg
    coverage: dict[str, _NonNeg]
    experience_id: _Id | None = None
    group: _Id | msgspec.UnsetType = msgspec.UNSET
    representation: str | msgspec.UnsetType = msgspec.UNSET
    text: str | msgspec.UnsetType = msgspec.UNSET
    timestamp: _Real | msgspec.UnsetType = msgspec.UNSET
    # Write-time estimates (see .estimates): null means none, like absent.
    estimated_value: _NonNeg | None = None
    estimated_coverage: dict[str, _NonNeg] | None = None


class _Query(msgspec.Struct):
    query_id: _Id
    required_unit_ids: list[str]


class _Schema(msgspec.Struct):
    format: Literal["memaudit.package/1"]
    package_id: _Id
    units: Annotated[list[_Unit], msgspec.Meta(min_length=1)]
    candidates: Annotated[list[_Candidate], msgspec.Meta(min_length=1)]
    experiences: list[_Experience] = []
    queries: list[_Query] = []
    objective: dict[str, Any] = {}
    budgets: Annotated[list[_NonNeg], msgspec.Meta(min_length=1)] | msgspec.UnsetType = msgspec.UNSET
    budget: _NonNeg | msgspec.UnsetType = msgspec.UNSET
    cost_model: str | msgspec.UnsetType = msgspec.UNSET
    meta: dict[str, Any] | msgspec.UnsetType = msgspec.UNSET


_UNSET = msgspec.UNSET
_NAMED = {name: SaturationSpec(name) for name in SATURATIONS}


def _fast_package(data: Any, source: str | None, limits: Limits) -> dict[str, Any] | None:
    """The validated package when every check passes at once; None when in doubt."""
    try:
        pkg = msgspec.convert(data, _Schema)
    except msgspec.ValidationError:
        return None
    units, cands, exps, queries = pkg.units, pkg.candidates, pkg.experiences, pkg.queries
    if (len(cands) > limits.max_candidates or len(units) > limits.max_units
            or (pkg.budgets is not _UNSET and (pkg.budget is not _UNSET or len(pkg.budgets) > limits.max_budgets))):
        return None
    unit_index = {u.unit_id: r for r, u in enumerate(units)}
    exp_index = {e.experience_id: i for i, e in enumerate(exps)}
    candidate_ids = [c.candidate_id for c in cands]
    if (len(unit_index) != len(units) or len(exp_index) != len(exps)
            or len(set(candidate_ids)) != len(cands)
            or len({q.query_id for q in queries}) != len(queries)):
        return None
    unit_keys = unit_index.keys()
    for q in queries:
        if not unit_keys >= set(q.required_unit_ids):
            return None

    objective = pkg.objective
    default_sat = _NAMED["cap1"]
    if "group_capacity" in objective:
        k = objective["group_capacity"]
        if type(k) is not int or not 1 <= k <= MAX_EXACT_INT:
            return None
    if objective:
        spec = objective.get("saturation", "cap1")
        default_sat = _NAMED.get(spec) if isinstance(spec, str) else _slow_saturation(spec, limits)  # type: ignore[assignment]
        if default_sat is None:
            return None
    unit_sats = [default_sat] * len(units)
    weights: list[float] = []
    weighted = 0
    for r, u in enumerate(units):
        if u.weight is not _UNSET:
            weighted += 1
            weights.append(float(u.weight))
        if u.saturation is not _UNSET:
            spec = u.saturation
            sat = _NAMED.get(spec) if isinstance(spec, str) else _slow_saturation(spec, limits)
            if sat is None:
                return None
            unit_sats[r] = sat
    if weighted == len(units):
        rule = "explicit"
    elif weighted == 0 and queries:
        demand = dict.fromkeys(unit_index, 0.0)
        for q in queries:
            for ref in set(q.required_unit_ids):  # a query naming a unit twice counts once
                demand[ref] += 1.0
        weights = list(demand.values())
        rule = "query_demand"
    else:
        return None

    exp_time = {e.experience_id: float(e.timestamp) for e in exps if e.timestamp is not _UNSET}
    # Whole-list steps (C loops) instead of Python work per candidate.
    covs = [c.coverage for c in cands]
    if not unit_keys >= set().union(*covs):
        return None
    estimated = [c.estimated_coverage for c in cands if c.estimated_coverage]
    if estimated and not unit_keys >= set().union(*estimated):
        return None
    nonzeros = sum(map(len, covs))
    indptr = list(accumulate(map(len, covs), initial=0))
    lookup = unit_index.__getitem__
    raw_keys = list(chain.from_iterable(covs))
    raw_values: list[float] = list(chain.from_iterable(map(dict.values, covs)))
    raw_units = indices = list(map(lookup, raw_keys))
    values = raw_values
    if 0 in values:  # zero entries never change F: the arrays leave them out
        kept = [[(k, v) for k, v in cov.items() if v > 0] for cov in covs]
        indptr = list(accumulate(map(len, kept), initial=0))
        indices = [lookup(k) for pairs in kept for k, _ in pairs]
        values = [v for pairs in kept for _, v in pairs]
    exp_ids = [c.experience_id for c in cands]
    if exps and not exp_index.keys() >= set(exp_ids) - {None}:
        return None
    groups = [c.group for c in cands]
    if _UNSET in groups:  # a candidate without a group is in its experience's, else in its own
        groups = [(e if e is not None else OWN_GROUP + c.candidate_id) if c.group is _UNSET else c.group
                  for c, e in zip(cands, exp_ids)]
    # Groups numbered in order of first appearance, for the compiled arrays.
    group_index = {key: g for g, key in enumerate(dict.fromkeys(groups))}
    times: list[float] | None = None
    if [c.timestamp for c in cands].count(_UNSET) == len(cands):  # each one's time is its experience's
        try:
            times = [exp_time[e] for e in exp_ids]  # type: ignore[index]  # None raises KeyError too
        except KeyError:  # no experience, or one without a timestamp
            times = None
    if times is None:
        times = [
            float(c.timestamp) if c.timestamp is not _UNSET
            else exp_time[e] if e in exp_time
            else float(exp_index[e]) if e in exp_index
            else float(i)
            for i, (c, e) in enumerate(zip(cands, exp_ids))
        ]
    costs = [float(c.cost) for c in cands]
    if nonzeros > limits.max_nonzeros or not math.isfinite(sum(costs)):
        return None
    if not _objective_is_finite(indices, values, weights, unit_sats):
        return None
    return {
        "data": data, "source": source, "weights_rule": rule, "unit_weights": weights,
        "unit_saturations": unit_sats, "default_saturation": default_sat, "candidate_groups": groups,
        "candidate_times": times,
        "arrays": {
            "cost": costs, "indptr": indptr, "indices": indices, "values": values,
            "raw_units": raw_units, "raw_values": raw_values, "candidate_ids": candidate_ids,
            "representations": [c.representation if c.representation is not _UNSET else "" for c in cands],
            "group_ids": [str(key).removeprefix(OWN_GROUP) for key in group_index],  # every key is a str by now
            "group_of": list(map(group_index.__getitem__, groups)),
            "unit_ids": list(unit_index),
            "group_capacity": objective.get("group_capacity", 1),
        },
    }


def scanned_package(raw: bytes, source: str | None, limits: Limits) -> dict[str, Any] | None:
    """The fields of a valid package read by the core's scanner (one C++ pass over the
    text, ``cpp/src/package_scan.cpp``); None when the scanner is in doubt. The scanner
    accepts what :func:`_fast_package` accepts and builds the same arrays, as numpy arrays.
    ``data`` is left None: :func:`.package.scan_text` decodes it from the text on first use."""
    if type(raw) is not bytes:
        raw = bytes(raw)  # a bytearray or memoryview: the scanner reads bytes
    scanned = _core.scan_package(raw, limits.max_candidates, limits.max_units, limits.max_nonzeros,
                                 limits.max_budgets, limits.max_depth)
    if scanned is None:
        return None
    default_sat = _NAMED[scanned["default_saturation"]]
    names = scanned["unit_saturations"]
    return {
        "data": None,  # decoded from the text when asked for
        "source": source, "weights_rule": scanned["weights_rule"],
        "unit_weights": scanned["unit_weights"],
        "unit_saturations": [default_sat] * len(scanned["unit_ids"]) if names is None else [_NAMED[n] for n in names],
        "default_saturation": default_sat, "candidate_groups": scanned["candidate_groups"],
        "candidate_times": scanned["candidate_times"], "arrays": scanned,
    }


def _objective_is_finite(indices: list[int], values: list[float], weights: list[float],
                         sats: list[SaturationSpec]) -> bool:
    """F of the whole candidate set stays within double range (the fast form of
    :func:`finite_range_problem`)."""
    if all(s.name == "cap1" for s in sats):  # h <= 1, so F <= the sum of the weights
        total_weight = sum(weights)
        return math.isfinite(total_weight) and total_weight <= 1e300
    import numpy as np

    reach = np.bincount(np.asarray(indices, dtype=np.intp), weights=np.asarray(values, dtype=np.float64),
                        minlength=len(weights))
    names = {s.name for s in sats}
    if names == {"cap1"}:
        h = np.minimum(reach, 1.0)
    else:
        h = np.array([min(1.0, z) if s.name == "cap1" else z if s.name == "linear" else math.log1p(z)
                      if s.name == "log1p" else s.points[-1][1] for z, s in zip(reach.tolist(), sats)])
    with np.errstate(all="ignore"):
        total = float(np.dot(np.asarray(weights, dtype=np.float64), h))
    return math.isfinite(total) and total <= 1e300


def _encodable(data: Any) -> bool:
    """True when ``data`` can be written as JSON (strings from Python may hold lone surrogates)."""
    try:
        _fast_encode(data)
    except (msgspec.EncodeError, TypeError, ValueError, RecursionError, OverflowError):
        return False
    return True


def _slow_saturation(spec: Any, limits: Limits) -> SaturationSpec | None:
    try:
        return _Validator({}, None, _default_locator, limits).saturation(spec, None, "saturation")
    except (_Stop, _Full):
        return None
