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

    # The branch-and-bound alone, as in the lean path: a worker holds one core.
    results = solve(compiled, budgets=budgets, time_limit=options.time_limit, node_limit=options.node_limit,
                    cancel=cancel, finish=None)
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
    raw = solve_core(compiled.problem, budgets,
                     None if time_limit is None or time_limit == math.inf else float(time_limit),
                     None if node_limit is None else int(node_limit), cancel)
    records = []
    for r in raw:
        if r.status == "interrupted":
            return []
        record = solved_record(compiled, r)
        if options.writers:
            from ..evaluate.baselines import writer_scores

            record["writers"] = writer_scores(compiled, float(r.budget), options.writers, opt=float(r.value),
                                              estimator=_estimator(options))
        records.append(record)
    return records


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
