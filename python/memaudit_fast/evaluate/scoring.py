"""Scoring an externally chosen store: ``F(X) / OPT(B)`` (MISSION.md section 1).

A store is feasible when its candidates are distinct, at most one per group, and their
total cost (an exactly rounded sum) is at most ``B + 1e-12 max(1, B)`` (the exact solver's
rule, absorbing rounding in float cost sums). An infeasible store scores 0 and the
result says why; unknown candidate ids are an error naming them (a typo must not pass as
a bad writer). When ``OPT = 0`` every feasible store scores 1, the convention of the
MEMAUDIT artifact.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..model.compiled import CompiledPackage, check_budget, compile_package, store_problems
from ..model.package import Package
from ..solve.exact import exact_opt


@dataclass(frozen=True)
class ScoreResult:
    """The score of one store at one budget."""

    package_id: str
    budget: float
    selected: tuple[str, ...]
    value: float  # F(X), also reported for an infeasible store
    cost: float
    feasible: bool
    reason: str | None  # why the store is infeasible
    opt: float
    ratio: float | None  # 0 when infeasible

    def to_record(self) -> dict[str, Any]:
        return {
            "format": "memaudit.score/1",
            "package_id": self.package_id,
            "budget": self.budget,
            "selected": list(self.selected),
            "value": self.value,
            "cost": self.cost,
            "feasible": self.feasible,
            "reason": self.reason,
            "opt": self.opt,
            "ratio": self.ratio,
        }


def score(
    package: Package | CompiledPackage | dict[str, Any] | str | Path,
    store_ids: Iterable[str],
    budget: float,
    *,
    opt: float | None = None,
) -> ScoreResult:
    """Score a store chosen outside memaudit_fast.

    .. math::

        \\text{ratio}(X) = F(X) / OPT(B) \\text{ if X is feasible, else } 0.

    Parameters
    ----------
    package
        The package (or dict / path / compiled form).
    store_ids
        Candidate ids of the store.
    budget
        The budget B.
    opt
        ``OPT(B)``; solved exactly when not given.

    Raises
    ------
    UsageError
        When ids are not candidates of the package (all unknown ids are named), the
        budget is not a number >= 0, or ``opt`` is not a finite number >= 0 or is below
        the value of the (feasible) store.
    """
    if opt is not None and (isinstance(opt, bool) or not isinstance(opt, (int, float)) or not math.isfinite(opt)
                            or opt < 0):
        raise UsageError(f"opt (--opt) must be OPT(B), a finite number >= 0; got {opt!r}")
    c = compile_package(package)
    ids = [str(s) for s in store_ids]
    budget = check_budget(budget)
    index = c.index_of()
    unknown = [s for s in dict.fromkeys(ids) if s not in index]
    if unknown:
        raise UsageError(
            f"package {c.package_id!r} has no candidates {', '.join(repr(s) for s in unknown)}"
        )
    chosen = list(dict.fromkeys(index[s] for s in ids))
    problems = store_problems(c, ids, float(budget))
    value = c.objective(chosen)
    if opt is None:
        opt = exact_opt(c, float(budget))
    feasible = not problems
    if feasible and value > float(opt) + 1e-9 * max(1.0, abs(float(opt))):
        raise UsageError(f"the store is worth {value:.12g}, more than the opt given ({float(opt):.12g}): OPT(B) is "
                         "at least the value of every store that fits B; leave opt out to have it solved")
    return ScoreResult(
        package_id=c.package_id,
        budget=float(budget),
        selected=tuple(ids),
        value=value,
        cost=math.fsum(float(c.cost[i]) for i in chosen),
        feasible=feasible,
        reason=None if feasible else "; ".join(problems),
        opt=float(opt),
        ratio=ratio_of(value, float(opt)) if feasible else 0.0,
    )


GAIN_EPSILON = 1e-12


def ratio_of(value: float, opt: float) -> float | None:
    """``value / opt`` with the artifact's convention for ``opt == 0``.

    When ``|opt| <= 1e-12`` every feasible store has value 0 and scores 1; a positive value
    against a zero optimum cannot be scored (``None``).
    """
    if abs(opt) <= GAIN_EPSILON:
        return 1.0 if abs(value) <= GAIN_EPSILON else None
    return value / opt
