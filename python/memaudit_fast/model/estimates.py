"""Optional protocol fields of a package: write-time estimates and the group capacity.

A coverage-blind writer (``estimated_greedy``, ``estimated_gvt``) cannot see a candidate's
true ``coverage``; a package may carry what such a writer would see instead
(``package-format.md``):

- ``candidates[i].estimated_value``: a finite number >= 0, the estimated value of storing the
  candidate alone (a modular estimate);
- ``candidates[i].estimated_coverage``: a map ``{unit_id: amount}`` like ``coverage``; the
  estimated value of a store is then ``F`` computed with these amounts through the package's
  own saturation.

Both fields are read from the single-file layout and from the artifact's
``candidate_memories.jsonl`` (which writes ``"estimated_value": null`` and
``"estimated_coverage": {}`` for a candidate without an estimate: ``null`` and ``{}`` mean
"no estimate", as in the artifact). They are kept as given and written back unchanged; OPT,
the certificate and every score ignore them.

``objective.group_capacity`` (an integer >= 1, default 1) is the number of candidates a
group may hold.

The checks are called by the package validator with itself as ``v`` (its ``number``,
``expect`` and ``fail`` name the package, record and field in every message).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .jsonio import MAX_EXACT_INT

ESTIMATE_FIELDS = ("estimated_value", "estimated_coverage")


def check_candidate_estimates(v: Any, cand: Mapping[str, Any], where: str, unit_index: Mapping[str, int]) -> None:
    """Validate a candidate's ``estimated_value`` / ``estimated_coverage`` (when present)."""
    value = cand.get("estimated_value")
    if value is not None:
        v.number(value, where, "estimated_value")
    cov = cand.get("estimated_coverage")
    if cov is None:
        return
    v.expect(isinstance(cov, dict), cov, "an object {unit_id: value} like coverage", where, "estimated_coverage")
    for unit_id, amount in cov.items():
        if unit_id not in unit_index:
            v.fail(f"refers to unit {unit_id!r}, which is not in units", record=where, fld="estimated_coverage")
        v.number(amount, where, f"estimated_coverage.{unit_id}")


def check_group_capacity(v: Any, objective: Mapping[str, Any]) -> int:
    """``objective.group_capacity``: an integer >= 1 (default 1)."""
    if "group_capacity" not in objective:
        return 1
    k = objective["group_capacity"]
    v.expect(type(k) is int and 1 <= k <= MAX_EXACT_INT, k,
             "an integer from 1 to 2^53 (candidates a group may hold)", None, "objective.group_capacity")
    return int(k)


@dataclass(frozen=True)
class CandidateEstimate:
    """What a coverage-blind writer may know of one candidate (None: not given)."""

    value: float | None
    coverage: dict[str, float] | None


def candidate_estimates(candidates: list[dict[str, Any]]) -> list[CandidateEstimate]:
    """The estimates of a validated package's candidates, in candidate order."""
    out = []
    for cand in candidates:
        value = cand.get("estimated_value")
        cov = cand.get("estimated_coverage")
        # A non-empty map is an estimate even when every amount is 0; {} is no estimate.
        coverage = {str(u): float(a) for u, a in cov.items() if a > 0} if cov else None
        out.append(CandidateEstimate(None if value is None else float(value), coverage))
    return out


def group_capacity_of(data: Mapping[str, Any]) -> int:
    """The group capacity of a validated package's data (1 when not given)."""
    objective = data.get("objective")
    if isinstance(objective, dict) and "group_capacity" in objective:
        return int(objective["group_capacity"])
    return 1


def with_group_capacity(package: Any, k: int | None) -> Any:
    """The package with ``objective.group_capacity = k`` (``--group-capacity``); as is for None.

    The user's data is copied, never changed; the copy is validated again.
    """
    if k is None:
        return package
    from ..errors import UsageError

    if type(k) is not int or k < 1:
        raise UsageError(f"--group-capacity must be an integer >= 1, got {k!r}")
    if group_capacity_of(package.data) == k:
        return package
    data = dict(package.data)
    data["objective"] = {**(data.get("objective") or {}), "group_capacity": k}
    return type(package).from_dict(data, source=package.source)  # no import: package.py imports this module
