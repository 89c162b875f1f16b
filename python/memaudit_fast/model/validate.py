"""The careful validator: finds and words every defect of a package (up to ``MAX_ERRORS``).

It runs whenever the fast path (:mod:`.fastpath`) is in doubt, and for packages given as
Python data that the fast path refuses. Each check that fails records a :class:`PackageError`
naming the package, the record, the field, what was found and what was expected; the checks
of other records and sections still run. :meth:`_Validator.run` returns the validated
package's fields (for :class:`.package.Package`) or raises the first error, whose ``errors``
holds them all.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NoReturn

from ..errors import PackageError
from .estimates import check_candidate_estimates, check_group_capacity
from .jsonio import MAX_EXACT_INT, _has_surrogate, cut, describe, is_number
from .limits import Limits
from .spec import FORMAT, MAX_ERRORS, OWN_GROUP, RESULT_FORMAT, SATURATIONS, Locator, SaturationSpec


class _EveryId(dict):  # type: ignore[type-arg]
    """An index that holds every id: for references to a list that could not be read."""

    def __contains__(self, key: object) -> bool:
        return True


class _Stop(Exception):
    """One check failed; the checks of that record or section stop, the others go on."""


class _Full(Exception):
    """The error cap is reached; validation stops."""


class _Validator:
    def __init__(
        self, data: Any, source: str | None, locator: Locator, limits: Limits, *,
        defects: list[tuple[list[Any], str]] | None = None, max_errors: int = MAX_ERRORS,
    ) -> None:
        self.data = data
        self.source = source
        self.locate = locator
        self.limits = limits
        self.package_id: str | None = None
        self.errors: list[PackageError] = []
        self.max_errors = max(1, max_errors)
        self.defects = defects or []
        self.defect_places: set[tuple[str | None, str | None]] = set()

    # Error helpers -----------------------------------------------------------------------
    def report(self, message: str, *, record: str | None = None, fld: str | None = None) -> None:
        if (record, fld) in self.defect_places:
            return  # already reported by the decoder, in its own words
        self.errors.append(PackageError(
            message, package_id=self.package_id, record=record, field=fld, source=self.source
        ))
        if len(self.errors) >= self.max_errors:
            raise _Full

    def fail(self, message: str, *, record: str | None = None, fld: str | None = None) -> NoReturn:
        self.report(message, record=record, fld=fld)
        raise _Stop

    def expect(self, ok: bool, found: Any, expected: str, record: str | None, fld: str) -> None:
        if not ok:
            self.fail(f"found {describe(found)}, expected {expected}", record=record, fld=fld)

    def number(
        self, value: Any, record: str | None, fld: str, *, nonnegative: bool = True
    ) -> float:
        kind = type(value)
        if kind is float or (kind is int and -MAX_EXACT_INT <= value <= MAX_EXACT_INT):  # no calls
            number = float(value)
            if -math.inf < number < math.inf and (number >= 0 or not nonnegative):
                return number
        self.expect(is_number(value), value, "a JSON number", record, fld)
        if isinstance(value, int) and not -MAX_EXACT_INT <= value <= MAX_EXACT_INT:
            self.fail(
                f"found {describe(value)}, expected a finite number a double holds exactly "
                "(integers up to 2^53 = 9007199254740992 in magnitude)",
                record=record, fld=fld,
            )
        number = float(value)
        self.expect(math.isfinite(number), value, "a finite number", record, fld)
        if nonnegative:
            self.expect(number >= 0, value, "a number >= 0", record, fld)
        return number

    def identifier(self, value: Any, record: str | None, fld: str) -> str:
        if type(value) is str and value:
            return value
        self.expect(
            isinstance(value, str) and value != "", value, "a non-empty string id", record, fld
        )
        return str(value)

    def section(self, check: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run one independent check; a failure is recorded and the others still run."""
        try:
            return check(*args, **kwargs)
        except _Stop:
            return None

    def record_list(self, key: str, *, required: bool) -> list[Any] | None:
        """The list, or None when it is unusable (reported)."""
        if key not in self.data:
            if required:
                self.report(f"missing; expected a non-empty list of {key}", fld=key)
                return None
            return []
        value = self.data[key]
        if not isinstance(value, list):
            self.report(f"found {describe(value)}, expected a list of {key}", fld=key)
            return None
        if required and not value:
            self.report(f"found an empty list, expected at least one of {key}", fld=key)
            return None
        bad = False
        for i, rec in enumerate(value):
            if not isinstance(rec, dict):
                self.report(f"found {describe(rec)}, expected an object", record=self.locate(key, i), fld=key)
                bad = True
        return None if bad else value

    def unique_ids(self, records: list[dict[str, Any]], list_name: str, key: str) -> dict[str, int]:
        seen: dict[str, int] = {}
        for i, rec in enumerate(records):
            ident = rec.get(key)
            if type(ident) is str and ident and ident not in seen:  # the common case
                seen[ident] = i
                continue
            where = self.locate(list_name, i)
            if key not in rec:
                self.section(self.fail,
                    f"missing; every record of {list_name} needs {key!r}", record=where, fld=key)
                continue
            if not self.section(self.identifier, rec[key], where, key):
                continue
            assert isinstance(ident, str)
            if ident in seen:
                self.report(
                    f"duplicate id {ident!r} (first at {self.locate(list_name, seen[ident])}); "
                    "ids must be unique",
                    record=where,
                    fld=key,
                )
                continue
            seen[ident] = i
        return seen

    # The checks ----------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        try:
            package = self.checks()
        except (_Full, _Stop):
            package = None
        if self.errors or package is None:
            first = self.errors[0]
            if len(self.errors) >= self.max_errors:
                first.truncated = True
            first.errors = list(self.errors)
            raise first
        return package

    def checks(self) -> dict[str, Any] | None:
        data = self.data
        if not isinstance(data, dict):
            self.fail(f"found {describe(data)}, expected a JSON object holding one package")
        fmt = data.get("format")
        if fmt is None:
            self.fail(f"missing; expected \"format\": \"{FORMAT}\"", fld="format")
        if fmt == RESULT_FORMAT:  # a result record where a package was expected: say what it is
            self.fail(f"found {RESULT_FORMAT!r}: a result record (from batch, solve --json or sweep --json), "
                      "not a package; read results with memaudit export or memaudit report", fld="format")
        if fmt != FORMAT:
            self.fail(
                f"found {describe(fmt)}, expected {FORMAT!r} (the only version this reader knows)",
                fld="format",
            )
        if "package_id" not in data:
            self.report("missing; expected a non-empty string", fld="package_id")
        else:
            pid = self.section(self.identifier, data["package_id"], None, "package_id")
            if isinstance(pid, str) and not _has_surrogate(pid):
                self.package_id = pid
        for path, problem in self.defects:
            record, fld = self.place(path)
            self.report(problem, record=record, fld=fld)
            self.defect_places.add((record, fld))

        objective = data.get("objective", {})
        default_sat = SaturationSpec("cap1")
        if self.section(self.expect, isinstance(objective, dict), objective, "an object", None, "objective") is None \
                and isinstance(objective, dict):
            default_sat = self.section(
                lambda: self.saturation(objective.get("saturation", "cap1"), None, "objective.saturation")
            ) or default_sat
            self.section(check_group_capacity, self, objective)
        self.section(self.budgets)
        if "cost_model" in data:
            self.section(self.expect, isinstance(data["cost_model"], str), data["cost_model"], "a string",
                                             None, "cost_model")
        if "meta" in data:
            self.section(self.expect, isinstance(data["meta"], dict), data["meta"], "an object", None, "meta")

        experiences = self.record_list("experiences", required=False)
        units = self.record_list("units", required=True)
        candidates = self.record_list("candidates", required=True)
        queries = self.record_list("queries", required=False)

        self.check_sizes(
            None if candidates is None else len(candidates),
            None if candidates is None else sum(len(c["coverage"]) for c in candidates
                                                if isinstance(c.get("coverage"), dict)),
            None if units is None else len(units))
        if self.errors and any(e.detail.startswith("holds ") and "above the limit" in e.detail for e in self.errors):
            return None  # too large to look further

        exp_index = self.unique_ids(experiences, "experiences", "experience_id") if experiences is not None else {}
        if units is not None:
            unit_index = self.unique_ids(units, "units", "unit_id")
        elif isinstance(listed := self.data.get("units"), list):
            # Some entries are not objects (reported): the ids the others hold are not "missing".
            unit_index = {u["unit_id"]: i for i, u in enumerate(listed) if isinstance(u, dict)
                          and isinstance(u.get("unit_id"), str)}
        else:  # no list of units to look in (reported): no reference to one is judged
            unit_index = _EveryId()
        if candidates is not None:
            self.unique_ids(candidates, "candidates", "candidate_id")
        if queries is not None:
            self.unique_ids(queries, "queries", "query_id")

        exp_time: dict[str, float] = {}
        for i, exp in enumerate(experiences or []):
            if "timestamp" in exp:
                t = self.section(self.number,
                    exp["timestamp"], self.locate("experiences", i), "timestamp", nonnegative=False)
                if t is not None and isinstance(exp.get("experience_id"), str):
                    exp_time[exp["experience_id"]] = t

        unit_sats: list[SaturationSpec] = []
        for i, unit in enumerate(units or []):
            unit_sats.append(self.section(self.check_unit, unit, i, default_sat) or default_sat)

        for i, query in enumerate(queries or []):
            self.section(self.check_query, query, i, unit_index)

        weights_rule = None
        if units is not None and queries is not None:
            weights_rule = self.section(self.weights, units, queries)

        groups: list[str] = []
        times: list[float] = []
        for i, cand in enumerate(candidates or []):
            self.section(self.check_candidate,
                cand, i, unit_index, experiences or [], exp_index, exp_time, groups, times)

        if self.errors or units is None or candidates is None or weights_rule is None:
            return None
        weights, rule = weights_rule
        self.section(self.check_finite_range, candidates, units, weights, unit_sats)
        if self.errors:
            return None
        return {
            "data": data, "source": self.source, "weights_rule": rule, "unit_weights": weights,
            "unit_saturations": unit_sats, "default_saturation": default_sat,
            "candidate_groups": groups, "candidate_times": times,
        }

    def place(self, path: list[Any]) -> tuple[str | None, str | None]:
        """(record, field) of a JSON path inside the package, for messages."""
        if len(path) >= 2 and path[0] in ("experiences", "units", "candidates", "queries") \
                and isinstance(path[1], int):
            rest = path[2:]
            return self.locate(path[0], path[1]), _dotted(rest) or None
        return None, _dotted(path) or None

    def check_unit(self, unit: dict[str, Any], i: int, default_sat: SaturationSpec) -> SaturationSpec:
        where = self.locate("units", i)
        for key in ("text", "kind", "state"):
            if key in unit:
                self.section(self.expect, isinstance(unit[key], str), unit[key], "a string", where, key)
        if "saturation" in unit:
            return self.saturation(unit["saturation"], where, "saturation")
        return default_sat

    def check_query(self, query: dict[str, Any], i: int, unit_index: dict[str, int]) -> None:
        where = self.locate("queries", i)
        if "required_unit_ids" not in query:
            self.fail("missing; expected a list of unit ids", record=where, fld="required_unit_ids")
        req = query["required_unit_ids"]
        self.expect(isinstance(req, list), req, "a list of unit ids", where, "required_unit_ids")
        for ref in req:
            self.expect(isinstance(ref, str), ref, "a unit id string", where, "required_unit_ids")
            if ref not in unit_index:
                self.report(
                    f"refers to unit {cut(repr(ref))}, which is not in units", record=where,
                    fld="required_unit_ids",
                )

    def check_candidate(
        self, cand: dict[str, Any], i: int, unit_index: dict[str, int], experiences: list[Any],
        exp_index: dict[str, int], exp_time: dict[str, float], groups: list[str], times: list[float],
    ) -> None:
        where = self.locate("candidates", i)
        if "cost" not in cand:
            self.report("missing; expected a number >= 0", record=where, fld="cost")
        else:
            self.section(self.number, cand["cost"], where, "cost")
        if "coverage" not in cand:
            self.report("missing; expected an object {unit_id: value} ({} allowed)", record=where, fld="coverage")
        else:
            cov = cand["coverage"]
            if self.section(self.expect, isinstance(cov, dict), cov, "an object {unit_id: value}", where,
                                                "coverage") is None and isinstance(cov, dict):
                for unit_id, value in cov.items():
                    if unit_id not in unit_index:
                        self.report(f"refers to unit {cut(repr(unit_id))}, which is not in units", record=where,
                                    fld="coverage")
                        continue
                    self.section(self.number, value, where, f"coverage.{unit_id}")
        self.section(check_candidate_estimates, self, cand, where, unit_index)
        exp_id = cand.get("experience_id")
        if exp_id is not None:
            self.identifier(exp_id, where, "experience_id")
            if experiences and exp_id not in exp_index:
                self.report(
                    f"refers to experience {cut(repr(exp_id))}, which is not in experiences",
                    record=where, fld="experience_id",
                )
        if "group" in cand:
            group = self.identifier(cand["group"], where, "group")
        elif exp_id is not None:
            group = str(exp_id)
        else:
            # Its own group; the prefix keeps it apart from any named group.
            group = OWN_GROUP + str(cand.get("candidate_id"))
        groups.append(group)
        for key in ("representation", "text"):
            if key in cand:
                self.section(self.expect, isinstance(cand[key], str), cand[key], "a string", where, key)
        if "timestamp" in cand:
            times.append(self.number(cand["timestamp"], where, "timestamp", nonnegative=False))
        elif exp_id is not None and exp_id in exp_time:
            times.append(exp_time[exp_id])
        elif exp_id is not None and exp_id in exp_index:
            times.append(float(exp_index[exp_id]))
        else:
            times.append(float(i))

    def check_finite_range(
        self,
        candidates: list[dict[str, Any]],
        units: list[dict[str, Any]],
        weights: list[float],
        sats: list[SaturationSpec],
    ) -> None:
        """Every store's cost and value must stay finite in double precision."""
        problem = finite_range_problem(candidates, units, weights, sats)
        if problem is not None:
            message, fld = problem
            self.fail(message, fld=fld)

    def check_limit(self, count: int, cap: int, fld: str, env: str, what: str | None = None) -> None:
        if count > cap:
            self.fail(
                f"holds {count} {what or fld}, above the limit of {cap}; raise it with {env} "
                "if the package is genuine",
                fld=fld,
            )

    def check_sizes(self, candidates: int | None, nonzeros: int | None, units: int | None) -> None:
        """The size limits on candidates, coverage entries and units (None: not given)."""
        if candidates is not None:
            self.section(self.check_limit, candidates, self.limits.max_candidates, "candidates",
                         "MEMAUDIT_MAX_CANDIDATES")
        if nonzeros is not None:
            self.section(self.check_limit, nonzeros, self.limits.max_nonzeros, "candidates",
                         "MEMAUDIT_MAX_NONZEROS", what="coverage entries")
        if units is not None:
            self.section(self.check_limit, units, self.limits.max_units, "units", "MEMAUDIT_MAX_UNITS")

    def refuse_counts(self, package_id: str | None, candidates: int, units: int, nonzeros: int,
                      budgets: int) -> None:
        """Raise the errors :meth:`checks` would give a package holding these counts, if any
        is above its limit (counted from the text, before anything decodes it whole)."""
        if package_id and not _has_surrogate(package_id):
            self.package_id = package_id
        self.section(self.check_limit, budgets, self.limits.max_budgets, "budgets", "MEMAUDIT_MAX_BUDGETS")
        self.check_sizes(candidates, nonzeros, units)
        if self.errors:
            first = self.errors[0]
            first.errors = list(self.errors)
            raise first

    def refuse_defects(self, defects: list[tuple[list[Any], str]]) -> NoReturn:
        """Raise the errors of values that are not JSON data, (JSON path, problem) each."""
        pid = self.data.get("package_id") if isinstance(self.data, dict) else None
        if type(pid) is str and pid and not _has_surrogate(pid):
            self.package_id = pid
        try:
            for path, problem in defects:
                record, fld = self.place(path)
                self.report(problem, record=record, fld=fld)
        except _Full:
            self.errors[0].truncated = True
        first = self.errors[0]
        first.errors = list(self.errors)
        raise first

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
                self.section(self.number, b, None, f"budgets[{k}]")

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
            isinstance(points, list) and len(points) >= 1, points,
            "a non-empty list of [z, h] points (the origin [0, 0] may be omitted)", record, f"{fld}.pwl",
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
            z = self.number(pt[0], record, f"{name}[0]")  # the coordinate itself is named
            h = self.number(pt[1], record, f"{name}[1]")
            parsed.append((z, h))
        if parsed[0][0] == 0.0:
            if parsed[0][1] != 0.0:
                self.fail(f"found {list(parsed[0])}, expected the first point [0, 0]: h passes through "
                          "the origin (the point may also be left out)", record=record, fld=f"{fld}.pwl[0][1]")
            listed_origin = True
        else:
            parsed.insert(0, (0.0, 0.0))  # the curve passes through (0, 0) whether listed or not
            listed_origin = False
        if len(parsed) < 2:
            self.fail("found only the origin, expected at least one point [z, h] with z > 0",
                      record=record, fld=f"{fld}.pwl")
        last_slope = math.inf
        for k in range(1, len(parsed)):
            (z0, h0), (z1, h1) = parsed[k - 1], parsed[k]
            name = f"{fld}.pwl[{k if listed_origin else k - 1}]"
            if not z1 > z0:
                self.fail(f"z = {z1} does not increase past {z0}; z must increase strictly", record=record,
                          fld=f"{name}[0]")
            if h1 < h0:
                self.fail(f"h = {h1} falls below {h0}; h must not decrease", record=record, fld=f"{name}[1]")
            slope = (h1 - h0) / (z1 - z0)
            # Concave: the point lies on or under the previous piece's line. Judged in h, to
            # within 1e-12 of h's size: a slope is a difference of h values over a step, and
            # equal slopes (say 5e-13 on h near 1) differ in their rounding by far more than
            # 1e-12 of themselves.
            line = h0 + last_slope * (z1 - z0)
            if slope > last_slope and h1 - line > 1e-12 * max(abs(h0), abs(h1), 1e-300):
                self.fail(
                    f"slope {slope!r} exceeds the previous slope {last_slope!r} (h = {h1!r} lies "
                    f"{h1 - line:.3g} above the previous piece's line); h must be concave (slopes "
                    "non-increasing, from the origin on)",
                    record=record, fld=name,
                )
            last_slope = slope
        return SaturationSpec("pwl", tuple(parsed))

    def weights(
        self, units: list[dict[str, Any]], queries: list[dict[str, Any]]
    ) -> tuple[list[float], str]:
        has = [("weight" in u) for u in units]
        # A weight that is not a number (null included) is that unit's own error, whatever
        # the others carry: it is judged before the mix, which would blame another unit.
        weights = [
            self.section(self.number, u["weight"], self.locate("units", i), "weight") if given else 0.0
            for i, (u, given) in enumerate(zip(units, has))
        ]
        if any(w is None for w in weights):
            raise _Stop
        if any(has) and not all(has):
            missing = has.index(False) if has[0] else has.index(True)
            self.fail(
                "some units carry a weight and others do not; give every unit a weight, or "
                "none (weights then come from query demand)",
                record=self.locate("units", missing), fld="weight",
            )
        if all(has):
            return weights, "explicit"
        if not queries:
            self.fail(
                "no unit has a weight and there are no queries to derive demand from, so "
                "every unit would weigh 0; give units a 'weight' or add queries",
                fld="units",
            )
        demand = {u["unit_id"]: 0.0 for u in units if isinstance(u.get("unit_id"), str)}
        for q in queries:
            refs = q.get("required_unit_ids")
            # A unit weighs the number of queries that require it: a query naming it twice counts once.
            for ref in {r for r in refs if isinstance(r, str)} if isinstance(refs, list) else ():
                if ref in demand:
                    demand[ref] += 1.0
        return [demand.get(u["unit_id"], 0.0) if isinstance(u.get("unit_id"), str) else 0.0
                for u in units], "query_demand"


def _dotted(path: list[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    return out


def finite_range_problem(
    candidates: list[dict[str, Any]], units: list[dict[str, Any]], weights: list[float],
    sats: list[SaturationSpec],
) -> tuple[str, str] | None:
    """Why a store's cost or value could overflow a double (None: it cannot)."""
    total_cost = sum(float(c["cost"]) for c in candidates)
    if not math.isfinite(total_cost):
        return ("the candidates' costs add up to more than double precision holds; scale costs down",
                "candidates")
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
        return ("weights times coverage can exceed double precision (the objective would overflow); "
                + "scale weights or coverage down", "units")
    return None
