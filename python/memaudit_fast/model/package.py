"""The package model: validation of the single-file layout ``memaudit.package/1``.

A package freezes one memory-writing decision (see ``package-format.md``). The model keeps
the user's dict untouched in ``Package.data`` (so unknown keys survive a round trip) and
adds a validated, typed view of what the solver needs. Validation is complete before any
solving: the first defect raises a :class:`PackageError` naming the package, the record,
the field, what was found and what was expected. Nothing is repaired silently.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import PackageError
from .estimates import check_candidate_estimates, check_group_capacity
from .jsonio import describe, is_number
from .limits import Limits, current_limits

FORMAT = "memaudit.package/1"
SATURATIONS = ("cap1", "linear", "log1p")

Locator = Callable[[str, int], str]


def _default_locator(list_name: str, index: int) -> str:
    return f"{list_name}[{index}]"






@dataclass(frozen=True)
class SaturationSpec:
    """One saturation h: a named family or a concave piecewise-linear function.

    ``points`` holds the PWL breakpoints ``[(0, 0), (z1, h1), ...]``; h is constant after
    the last one.
    """

    name: str
    points: tuple[tuple[float, float], ...] = ()

    def to_json(self) -> Any:
        if self.name == "pwl":
            return {"pwl": [list(p) for p in self.points]}
        return self.name


@dataclass
class Package:
    """A validated package.

    Attributes
    ----------
    data : dict
        The package exactly as given (single-file layout); never modified by validation.
    source : str or None
        Where it was read from, for messages.
    """

    data: dict[str, Any]
    source: str | None = None
    weights_rule: str = "explicit"
    unit_weights: list[float] = field(default_factory=list)
    unit_saturations: list[SaturationSpec] = field(default_factory=list)
    default_saturation: SaturationSpec = SaturationSpec("cap1")
    candidate_groups: list[str] = field(default_factory=list)
    candidate_times: list[float] = field(default_factory=list)

    @classmethod
    def from_dict(
        cls,
        data: Any,
        *,
        source: str | None = None,
        locator: Locator | None = None,
        limits: Limits | None = None,
    ) -> Package:
        """Validate a single-file package dict and return the package.

        ``limits`` caps sizes (default: :func:`memaudit_fast.model.limits.current_limits`).
        """
        return _Validator(data, source, locator or _default_locator, limits or current_limits()).run()

    @classmethod
    def from_arrays(cls, cost: Any, group: Any, coverage: Any, weight: Any, **options: Any) -> Package:
        """A validated package from numpy / scipy.sparse arrays (costs, groups, a candidates x
        units coverage matrix, unit weights); options and rules: :mod:`memaudit_fast.model.arrays`."""
        from .arrays import SOURCE, arrays_to_data

        data, locator = arrays_to_data(cost, group, coverage, weight, **options)
        return cls.from_dict(data, source=SOURCE, locator=locator)

    def __repr__(self) -> str:
        data = self.data if isinstance(self.data, dict) else {}
        return (f"Package({data.get('package_id')!r}, candidates={len(data.get('candidates') or [])}, "
                f"units={len(data.get('units') or [])}, budgets={data.get('budgets', data.get('budget'))}, "
                f"saturation={self.saturation_name!r})")

    # Plain accessors over the user's data -------------------------------------------------
    @property
    def package_id(self) -> str:
        return str(self.data["package_id"])

    @property
    def units(self) -> list[dict[str, Any]]:
        return self.data["units"]

    @property
    def candidates(self) -> list[dict[str, Any]]:
        return self.data["candidates"]

    @property
    def experiences(self) -> list[dict[str, Any]]:
        return self.data.get("experiences") or []

    @property
    def queries(self) -> list[dict[str, Any]]:
        return self.data.get("queries") or []

    @property
    def budgets(self) -> list[float]:
        """The package's own budgets (empty when it has none)."""
        if "budgets" in self.data:
            return [float(b) for b in self.data["budgets"]]
        if "budget" in self.data:
            return [float(self.data["budget"])]
        return []

    @property
    def saturation_name(self) -> str:
        names = {s.name for s in self.unit_saturations} or {self.default_saturation.name}
        return names.pop() if len(names) == 1 else "mixed"

    def total_cost(self) -> float:
        return float(sum(c["cost"] for c in self.candidates))

    def iter_candidates(self) -> Iterator[tuple[int, dict[str, Any]]]:
        return enumerate(self.candidates)


class _Validator:
    def __init__(self, data: Any, source: str | None, locator: Locator, limits: Limits) -> None:
        self.data = data
        self.source = source
        self.locate = locator
        self.limits = limits
        self.package_id: str | None = None

    # Error helpers -----------------------------------------------------------------------
    def fail(self, message: str, *, record: str | None = None, fld: str | None = None) -> None:
        raise PackageError(
            message, package_id=self.package_id, record=record, field=fld, source=self.source
        )

    def expect(self, ok: bool, found: Any, expected: str, record: str | None, fld: str) -> None:
        if not ok:
            self.fail(f"found {describe(found)}, expected {expected}", record=record, fld=fld)

    def number(
        self, value: Any, record: str | None, fld: str, *, nonnegative: bool = True
    ) -> float:
        kind = type(value)
        if kind is float or (kind is int and -(2**1000) < value < 2**1000):  # common case, no calls
            number = float(value)
            if -math.inf < number < math.inf and (number >= 0 or not nonnegative):
                return number
        self.expect(is_number(value), value, "a JSON number", record, fld)
        try:
            number = float(value)
        except OverflowError:
            number = math.inf  # an integer beyond double precision
        self.expect(math.isfinite(number), value, "a finite number", record, fld)
        if nonnegative:
            self.expect(number >= 0, value, "a number >= 0", record, fld)
        return number

    def identifier(self, value: Any, record: str, fld: str) -> str:
        if type(value) is str and value:
            return value
        self.expect(
            isinstance(value, str) and value != "", value, "a non-empty string id", record, fld
        )
        return str(value)

    def record_list(self, key: str, *, required: bool) -> list[Any]:
        if key not in self.data:
            if required:
                self.fail(f"missing; expected a non-empty list of {key}", fld=key)
            return []
        value = self.data[key]
        self.expect(isinstance(value, list), value, f"a list of {key}", None, key)
        if required and not value:
            self.fail(f"found an empty list, expected at least one of {key}", fld=key)
        for i, rec in enumerate(value):
            self.expect(isinstance(rec, dict), rec, "an object", self.locate(key, i), key)
        return value  # type: ignore[no-any-return]

    def unique_ids(self, records: list[dict[str, Any]], list_name: str, key: str) -> dict[str, int]:
        seen: dict[str, int] = {}
        for i, rec in enumerate(records):
            ident = rec.get(key)
            if type(ident) is str and ident and ident not in seen:  # the common case
                seen[ident] = i
                continue
            where = self.locate(list_name, i)
            if key not in rec:
                self.fail(f"missing; every record of {list_name} needs {key!r}", record=where, fld=key)
            ident = self.identifier(rec[key], where, key)
            if ident in seen:
                self.fail(
                    f"duplicate id {ident!r} (first at {self.locate(list_name, seen[ident])}); "
                    "ids must be unique",
                    record=where,
                    fld=key,
                )
            seen[ident] = i
        return seen

    # The checks ----------------------------------------------------------------------------
    def run(self) -> Package:
        data = self.data
        if not isinstance(data, dict):
            self.fail(f"found {describe(data)}, expected a JSON object holding one package")
        fmt = data.get("format")
        if fmt is None:
            self.fail(f"missing; expected \"format\": \"{FORMAT}\"", fld="format")
        if fmt != FORMAT:
            self.fail(
                f"found {describe(fmt)}, expected {FORMAT!r} (the only version this reader knows)",
                fld="format",
            )
        if "package_id" not in data:
            self.fail("missing; expected a non-empty string", fld="package_id")
        self.package_id = self.identifier(data["package_id"], None, "package_id")  # type: ignore[arg-type]

        objective = data.get("objective", {})
        self.expect(isinstance(objective, dict), objective, "an object", None, "objective")
        default_sat = self.saturation(objective.get("saturation", "cap1"), None, "objective.saturation")
        check_group_capacity(self, objective)
        self.budgets()
        if "cost_model" in data:
            self.expect(isinstance(data["cost_model"], str), data["cost_model"], "a string", None, "cost_model")
        if "meta" in data:
            self.expect(isinstance(data["meta"], dict), data["meta"], "an object", None, "meta")

        experiences = self.record_list("experiences", required=False)
        units = self.record_list("units", required=True)
        candidates = self.record_list("candidates", required=True)
        queries = self.record_list("queries", required=False)

        self.check_limit(len(candidates), self.limits.max_candidates, "candidates", "MEMAUDIT_MAX_CANDIDATES")
        self.check_limit(len(units), self.limits.max_units, "units", "MEMAUDIT_MAX_UNITS")
        nonzeros = sum(len(c["coverage"]) for c in candidates if isinstance(c.get("coverage"), dict))
        self.check_limit(nonzeros, self.limits.max_nonzeros, "candidates", "MEMAUDIT_MAX_NONZEROS",
                         what="coverage entries")

        exp_index = self.unique_ids(experiences, "experiences", "experience_id")
        unit_index = self.unique_ids(units, "units", "unit_id")
        self.unique_ids(candidates, "candidates", "candidate_id")
        self.unique_ids(queries, "queries", "query_id")

        exp_time: dict[str, float] = {}
        for i, exp in enumerate(experiences):
            if "timestamp" in exp:
                exp_time[exp["experience_id"]] = self.number(
                    exp["timestamp"], self.locate("experiences", i), "timestamp", nonnegative=False
                )

        unit_sats = []
        for i, unit in enumerate(units):
            where = self.locate("units", i)
            if "saturation" in unit:
                unit_sats.append(self.saturation(unit["saturation"], where, "saturation"))
            else:
                unit_sats.append(default_sat)
            for key in ("text", "kind", "state"):
                if key in unit:
                    self.expect(isinstance(unit[key], str), unit[key], "a string", where, key)

        for i, query in enumerate(queries):
            where = self.locate("queries", i)
            if "required_unit_ids" not in query:
                self.fail("missing; expected a list of unit ids", record=where, fld="required_unit_ids")
            req = query["required_unit_ids"]
            self.expect(isinstance(req, list), req, "a list of unit ids", where, "required_unit_ids")
            for ref in req:
                self.expect(isinstance(ref, str), ref, "a unit id string", where, "required_unit_ids")
                if ref not in unit_index:
                    self.fail(
                        f"refers to unit {ref!r}, which is not in units", record=where,
                        fld="required_unit_ids",
                    )

        weights, rule = self.weights(units, queries)

        groups: list[str] = []
        times: list[float] = []
        for i, cand in enumerate(candidates):
            where = self.locate("candidates", i)
            if "cost" not in cand:
                self.fail("missing; expected a number >= 0", record=where, fld="cost")
            self.number(cand["cost"], where, "cost")
            if "coverage" not in cand:
                self.fail("missing; expected an object {unit_id: value} ({} allowed)", record=where, fld="coverage")
            cov = cand["coverage"]
            self.expect(isinstance(cov, dict), cov, "an object {unit_id: value}", where, "coverage")
            for unit_id, value in cov.items():
                if unit_id not in unit_index:
                    self.fail(f"refers to unit {unit_id!r}, which is not in units", record=where, fld="coverage")
                self.number(value, where, f"coverage.{unit_id}")
            check_candidate_estimates(self, cand, where, unit_index)
            exp_id = cand.get("experience_id")
            if exp_id is not None:
                self.identifier(exp_id, where, "experience_id")
                if experiences and exp_id not in exp_index:
                    self.fail(
                        f"refers to experience {exp_id!r}, which is not in experiences",
                        record=where, fld="experience_id",
                    )
            if "group" in cand:
                group = self.identifier(cand["group"], where, "group")
            elif exp_id is not None:
                group = str(exp_id)
            else:
                # Its own group; the prefix keeps it apart from any named group.
                group = "\x00own:" + cand["candidate_id"]
            groups.append(group)
            for key in ("representation", "text"):
                if key in cand:
                    self.expect(isinstance(cand[key], str), cand[key], "a string", where, key)
            if "timestamp" in cand:
                times.append(self.number(cand["timestamp"], where, "timestamp", nonnegative=False))
            elif exp_id is not None and exp_id in exp_time:
                times.append(exp_time[exp_id])
            elif exp_id is not None and exp_id in exp_index:
                times.append(float(exp_index[exp_id]))
            else:
                times.append(float(i))

        self.check_finite_range(candidates, units, weights, unit_sats)
        return Package(
            data=data,
            source=self.source,
            weights_rule=rule,
            unit_weights=weights,
            unit_saturations=unit_sats,
            default_saturation=default_sat,
            candidate_groups=groups,
            candidate_times=times,
        )

    def check_finite_range(
        self,
        candidates: list[dict[str, Any]],
        units: list[dict[str, Any]],
        weights: list[float],
        sats: list[SaturationSpec],
    ) -> None:
        """Every store's cost and value must stay finite in double precision."""
        total_cost = sum(float(c["cost"]) for c in candidates)
        if not math.isfinite(total_cost):
            self.fail("the candidates' costs add up to more than double precision holds; "
                      "scale costs down", fld="candidates")
        reach = {u["unit_id"]: 0.0 for u in units}
        for cand in candidates:
            for unit_id, value in cand["coverage"].items():
                reach[unit_id] += float(value)
        total = 0.0
        for unit, w, sat in zip(units, weights, sats):
            z = reach[unit["unit_id"]]
            if sat.name == "cap1":
                h = min(1.0, z)
            elif sat.name == "linear":
                h = z
            elif sat.name == "log1p":
                h = math.log1p(z)
            else:
                h = sat.points[-1][1]
            total += w * h if w and h else 0.0
        if not math.isfinite(total) or total > 1e300:
            self.fail("weights times coverage can exceed double precision (the objective would "
                      "overflow); scale weights or coverage down", fld="units")

    def check_limit(self, count: int, cap: int, fld: str, env: str, what: str | None = None) -> None:
        if count > cap:
            self.fail(
                f"holds {count} {what or fld}, above the limit of {cap}; raise it with {env} "
                "if the package is genuine",
                fld=fld,
            )

    def budgets(self) -> None:
        data = self.data
        if "budgets" in data and "budget" in data:
            self.fail("both 'budget' and 'budgets' given; keep one", fld="budgets")
        if "budget" in data:
            self.number(data["budget"], None, "budget")
        if "budgets" in data:
            budgets = data["budgets"]
            self.expect(
                isinstance(budgets, list) and len(budgets) > 0, budgets,
                "a non-empty list of numbers >= 0", None, "budgets",
            )
            self.check_limit(len(budgets), self.limits.max_budgets, "budgets", "MEMAUDIT_MAX_BUDGETS")
            for k, b in enumerate(budgets):
                self.number(b, None, f"budgets[{k}]")

    def saturation(self, spec: Any, record: str | None, fld: str) -> SaturationSpec:
        if isinstance(spec, str):
            if spec in SATURATIONS:
                return SaturationSpec(spec)
            self.fail(
                f"found {describe(spec)}, expected one of {', '.join(SATURATIONS)} or "
                '{"pwl": [[z, h], ...]}',
                record=record, fld=fld,
            )
        if not (isinstance(spec, dict) and set(spec) == {"pwl"}):
            self.fail(
                f"found {describe(spec)}, expected one of {', '.join(SATURATIONS)} or "
                '{"pwl": [[z, h], ...]}',
                record=record, fld=fld,
            )
        points = spec["pwl"]
        self.expect(
            isinstance(points, list) and len(points) >= 2, points,
            "a list of at least two [z, h] points starting at [0, 0]", record, f"{fld}.pwl",
        )
        if len(points) > self.limits.max_pwl_points:
            self.fail(
                f"holds {len(points)} points, above the limit of {self.limits.max_pwl_points}; "
                "raise it with MEMAUDIT_MAX_PWL_POINTS if genuine",
                record=record, fld=f"{fld}.pwl",
            )
        parsed: list[tuple[float, float]] = []
        for k, pt in enumerate(points):
            name = f"{fld}.pwl[{k}]"
            self.expect(isinstance(pt, list) and len(pt) == 2, pt, "a pair [z, h]", record, name)
            z = self.number(pt[0], record, name)
            h = self.number(pt[1], record, name)
            parsed.append((z, h))
        if parsed[0] != (0.0, 0.0):
            self.fail(f"found {list(parsed[0])}, expected the first point [0, 0]", record=record, fld=f"{fld}.pwl[0]")
        last_slope = math.inf
        for k in range(1, len(parsed)):
            (z0, h0), (z1, h1) = parsed[k - 1], parsed[k]
            name = f"{fld}.pwl[{k}]"
            if not z1 > z0:
                self.fail(f"z = {z1} does not increase past {z0}; z must increase strictly", record=record, fld=name)
            if h1 < h0:
                self.fail(f"h = {h1} falls below {h0}; h must not decrease", record=record, fld=name)
            slope = (h1 - h0) / (z1 - z0)
            if slope > last_slope * (1 + 1e-12):
                self.fail(
                    f"slope {slope:.6g} exceeds the previous slope {last_slope:.6g}; "
                    "h must be concave (slopes non-increasing)",
                    record=record, fld=name,
                )
            last_slope = slope
        return SaturationSpec("pwl", tuple(parsed))

    def weights(
        self, units: list[dict[str, Any]], queries: list[dict[str, Any]]
    ) -> tuple[list[float], str]:
        has = [("weight" in u) for u in units]
        if any(has) and not all(has):
            missing = has.index(False) if has[0] else has.index(True)
            self.fail(
                "some units carry a weight and others do not; give every unit a weight, or "
                "none (weights then come from query demand)",
                record=self.locate("units", missing), fld="weight",
            )
        if all(has):
            return [
                self.number(u["weight"], self.locate("units", i), "weight")
                for i, u in enumerate(units)
            ], "explicit"
        if not queries:
            self.fail(
                "no unit has a weight and there are no queries to derive demand from, so "
                "every unit would weigh 0; give units a 'weight' or add queries",
                fld="units",
            )
        demand = {u["unit_id"]: 0.0 for u in units}
        for q in queries:
            for ref in q["required_unit_ids"]:
                demand[ref] += 1.0
        return [demand[u["unit_id"]] for u in units], "query_demand"


def locate_sources(mapping: Mapping[str, Callable[[int], str]]) -> Locator:
    """A locator that names records by their file and line (used by the artifact reader)."""

    def locate(list_name: str, index: int) -> str:
        if list_name in mapping:
            return mapping[list_name](index)
        return _default_locator(list_name, index)

    return locate




