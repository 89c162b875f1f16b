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
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UsageError
from ..model.compiled import CompiledPackage, check_budget, compile_package, store_problems
from ..model.jsonio import MAX_EXACT_INT
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
        Candidate ids of the store: a list (or any iterable) of strings. One string alone is
        refused (a ``TypeError``), never read letter by letter: pass ``["c3"]``, not ``"c3"``.
        An id listed twice makes the store infeasible (it scores 0, and ``reason`` says so);
        ``value`` and ``cost`` count each candidate once.
    budget
        The budget B (integers up to 2^53, as everywhere budgets are read).
    opt
        ``OPT(B)``; solved exactly when not given.

    Raises
    ------
    TypeError
        When ``store_ids`` is one string (or bytes) or not iterable.
    UsageError
        When ids are not candidates of the package (all unknown ids are named), the
        budget is not a number >= 0 (or an integer beyond 2^53), or ``opt`` is not a finite
        number >= 0 or is below the value of the (feasible) store.
    """
    if isinstance(store_ids, (str, bytes)):
        raise TypeError(f"store_ids must be a list of candidate ids, got one string {store_ids!r}; "
                        f"pass [{store_ids!r}] to score a store of that one candidate")
    if not hasattr(store_ids, "__iter__"):
        raise TypeError(f"store_ids must be a list of candidate ids, got {type(store_ids).__name__} {store_ids!r}")
    if opt is not None and (isinstance(opt, bool) or not isinstance(opt, (int, float)) or not math.isfinite(opt)
                            or opt < 0):
        raise UsageError(f"opt (--opt) must be OPT(B), a finite number >= 0; got {opt!r}")
    if isinstance(budget, (int, np.integer)) and not isinstance(budget, (bool, np.bool_)) \
            and abs(int(budget)) > MAX_EXACT_INT:
        raise UsageError(f"budget: integers are taken up to 2^53 = {MAX_EXACT_INT}, where every one is exact; "
                         f"got {budget}")
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
    # A repeated id is a problem of its own; the cost and groups are judged on each candidate
    # once, as ``cost`` and ``value`` count them (else the reason's cost was twice the shown one).
    repeated = [s for s, k in Counter(ids).items() if k > 1]
    problems = ([f"listed more than once: {', '.join(repr(s) for s in repeated)}"] if repeated else []) \
        + store_problems(c, list(dict.fromkeys(ids)), float(budget))
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
