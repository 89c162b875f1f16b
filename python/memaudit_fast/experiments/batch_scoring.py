"""The scores of one package in a batch (runs in a worker): the budgets to solve, the solves,
the writers' scores and certificates as records. :mod:`.batch` wraps them with the member's
digest and source (``score_member``)."""

from __future__ import annotations

import json
import math
from typing import Any

from ..errors import UsageError
from ..model.compiled import check_budgets
from ..results.records import solved_record
from .batch_resume import BatchOptions, unique

#: Seconds a budget is solved by the branch-and-bound alone (one core per worker) before HiGHS
#: joins it as in ``solve()`` (solve/race.py). MEMAUDIT-Small solves in well under a
#: millisecond and never gets there; an entity timeline of 1,000 candidates at 10% took 456 s
#: alone, against 7.6 s with the race.
BATCH_ALONE_SECONDS = 1.0

__all__ = ["budget_plan", "lean_records", "score_compiled"]


def budget_plan(package: Any, options: BatchOptions) -> list[tuple[float, float, float | None]]:
    """(key, budget, fraction or None) for every budget of ``package``, without duplicates."""
    if options.budgets is not None:
        return [(b, b, None) for b in options.budgets]
    if options.budget_fracs is not None:
        total = package.total_cost()
        return [(f, f * total, f) for f in options.budget_fracs]
    own = unique(float(b) for b in package.budgets)
    if not own:
        raise UsageError("the package has no budgets; pass --budgets or --budget-fracs")
    return [(b, b, None) for b in own]


def score_compiled(compiled: Any, budgets: list[float], options: BatchOptions, cancel: Any = None) -> list[dict[str, Any]]:
    """Solve every budget, then add writer scores and certificates when asked for.

    Returns no records when a solve was interrupted (``cancel`` or Ctrl-C): the caller must
    not record an unfinished package.
    """
    if compiled.group_capacity == 1 and options.certify == "none":
        return lean_records(compiled, budgets, options, cancel)
    from ..solve.exact import solve

    # As in the lean path: the branch-and-bound alone (one core per worker) for the first
    # BATCH_ALONE_SECONDS of a budget, then HiGHS beside it.
    results = solve(compiled, budgets=budgets, time_limit=options.time_limit, node_limit=options.node_limit,
                    cancel=cancel, finish=options.finish, handoff_after=BATCH_ALONE_SECONDS)
    if any(r.status == "interrupted" for r in results):
        return []
    records = []
    for result in results:
        record = result.to_record()
        if options.writers:
            from ..evaluate.baselines import writer_scores

            record["writers"] = writer_scores(compiled, result.budget, options.writers, opt=result.value,
                                              estimator=_estimator(options))
        if options.certify != "none":
            from ..solve.certify import certify

            # The MILP gets the solve's limit (a certificate stopped by it says time_limit); Ctrl-C
            # stops it with a KeyboardInterrupt, and the package is not written.
            record["certificate"] = certify(compiled, result, solver=options.certify,
                                            time_limit=options.time_limit).to_dict()
        records.append(record)
    return records


def lean_records(compiled: Any, budgets: list[float], options: BatchOptions, cancel: Any) -> list[dict[str, Any]]:
    """:func:`score_compiled` without certificates for one candidate per group: records
    straight from the core's results (the records ``solve()`` would give, see
    :func:`~..results.records.solved_record`), with the writers' scores when asked for."""
    from ..solve.exact import solve_core

    node_limit, time_limit = options.node_limit, options.time_limit
    if not (all(map(math.isfinite, budgets)) and min(budgets) >= 0):  # plain floats here, checked on the way
        budgets = check_budgets(budgets)  # raises the message of solve()
    limit = None if time_limit is None or time_limit == math.inf else float(time_limit)
    # A budget the branch-and-bound has not proven within BATCH_ALONE_SECONDS is solved again
    # with HiGHS beside it, as solve() does; a node limit keeps it alone (as solve()'s "auto"),
    # and so does finish=None.
    race_later = options.finish is not None and node_limit is None and (limit is None or limit > BATCH_ALONE_SECONDS)
    raw = solve_core(compiled.problem, budgets, BATCH_ALONE_SECONDS if race_later else limit,
                     None if node_limit is None else int(node_limit), cancel)
    records = []
    for r in raw:
        if r.status == "interrupted":
            return []
        if race_later and r.status == "time_limit":
            record = _raced_record(compiled, r, limit, cancel)
            if record is None:
                return []
        else:
            record = solved_record(compiled, r)
        if options.writers:
            from ..evaluate.baselines import writer_scores

            record["writers"] = writer_scores(compiled, float(r.budget), options.writers, opt=float(record["opt"]),
                                              estimator=_estimator(options))
        records.append(record)
    return records


def _raced_record(compiled: Any, first: Any, limit: float | None, cancel: Any) -> dict[str, Any] | None:
    """The record of a budget that the branch-and-bound alone left open after ``first`` (its
    core result at BATCH_ALONE_SECONDS): solved again by ``solve()`` with HiGHS racing it, within
    what is left of ``limit``. The record counts both solves' nodes and seconds; where the race
    too ends unproven, it keeps the better store and the smaller bound of the two. None when
    the solve was interrupted."""
    from ..solve.exact import solve

    left = None if limit is None else max(0.0, limit - float(first.seconds))
    result = solve(compiled, budget=float(first.budget), time_limit=left, cancel=cancel)
    if result.status == "interrupted":
        return None
    kept_first = not result.proven_optimal and float(first.value) > result.value
    record = solved_record(compiled, first) if kept_first else result.to_record()
    if not result.proven_optimal:  # both bounds are proven: the smaller one counts
        value = float(record["opt"])
        upper = max(value, min(float(first.upper_bound), result.upper_bound))
        record["upper_bound"] = upper
        record["gap"] = max(0.0, (upper - value) / upper) if upper > 0 else 0.0
    record["nodes"] = int(first.nodes) + result.nodes
    record["seconds"] = float(first.seconds) + result.seconds
    return record


def _estimator(options: BatchOptions) -> Any:
    """The estimator of a batch, loaded once per process from the model its options digested."""
    spec, identity = options.estimator, options.estimator_identity
    if spec is None or identity is None:
        return None
    if identity not in _ESTIMATORS:
        from ..evaluate.estimators import RidgeEstimator, load_estimator

        model = options.estimator_model
        _ESTIMATORS[identity] = load_estimator(spec) if model is None else \
            RidgeEstimator.from_json(json.loads(model), source=spec)
    return _ESTIMATORS[identity]


_ESTIMATORS: dict[str, Any] = {}
