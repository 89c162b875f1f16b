"""memaudit score: the ratio F(X) / OPT(B) of a store chosen outside memaudit."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..errors import UsageError
from ..evaluate.scoring import score
from ..model.package import Package
from .common import (
    add_subparser,
    group_capacity,
    load_one,
    one_number,
    print_json_line,
    read_json_input,
)


def add_parser(subparsers: Any) -> None:
    p = add_subparser(
        subparsers, "score",
        "Score a store (candidate ids) of a package at budget B as F(X)/OPT(B), solving OPT exactly "
        "unless --opt is given. An infeasible store (over budget, two candidates of one group, an id "
        "twice) scores 0 and the reason is shown; unknown ids are an error naming them (exit 2).",
        "memaudit score package.json --budget 8 --ids c3,c9",
    )
    p.add_argument("path", metavar="PACKAGE", help="the package (- for stdin)")
    p.add_argument("--budget", type=one_number, help="the budget B (default: the package's only budget)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--ids", type=id_list, help="comma-separated candidate ids")
    source.add_argument("--store", metavar="FILE",
                        help="JSON file (- for stdin): a list of candidate ids, or an object with 'selected'")
    p.add_argument("--opt", type=float, help="OPT(B) if already known (skips the exact solve)")
    p.add_argument("--group-capacity", type=group_capacity, metavar="K",
                   help="candidates a group may hold (overrides objective.group_capacity)")
    p.add_argument("--estimator", metavar="MODEL.json|embed",
                   help="also score the coverage-blind writers estimated_greedy/estimated_gvt at the same "
                        "budget, with this estimator where the package has no estimates")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run)


def read_store(path: str, package: Package | None = None, budget: float | None = None) -> tuple[list[str], float | None]:
    """The ids of a store file (a list, or an object with ``selected``: a result record, say)
    and the budget such an object states. An object that names another package, or another
    budget than ``--budget``, is refused: scoring it against this one would answer a question
    nobody asked."""
    data = read_json_input(path)
    ids = data.get("selected") if isinstance(data, dict) else data
    if not (isinstance(ids, list) and all(isinstance(s, str) for s in ids)):
        raise UsageError(f"{path}: expected a JSON list of candidate ids or an object with 'selected'")
    stated = data.get("budget") if isinstance(data, dict) else None
    stated = float(stated) if isinstance(stated, (int, float)) and not isinstance(stated, bool) else None
    if isinstance(data, dict) and package is not None:
        named = data.get("package_id")
        if named is not None and named != package.package_id:
            raise UsageError(f"{path}: the store is for package {named!r}, not {package.package_id!r}")
        if budget is not None and stated is not None and stated != budget:
            raise UsageError(f"{path}: the store is for budget {stated:g}, not --budget {budget:g}; drop "
                             "--budget to score it at its own")
    return ids, stated


def id_list(text: str) -> list[str]:
    """``--ids a,b`` (argparse type): entries as written; an empty one is refused, not dropped."""
    parts = text.split(",")
    if any(not part for part in parts) and text.strip():
        raise argparse.ArgumentTypeError(f"{text!r} has an empty entry; give ids separated by single commas, e.g. c3,c9")
    return [part for part in parts if part]


def resolve_ids(package: Package, ids: list[str]) -> list[str]:
    """Each id as the package spells it: as written when it is a candidate id, else without the
    spaces around it (``--ids "c3, c9"``); an id neither names stays as written, and is
    reported unknown."""
    known = {str(c.get("candidate_id")) for c in package.candidates}
    return [i if i in known or i.strip() not in known else i.strip() for i in ids]


def the_budget(package: Package, budget: float | None) -> float:
    if budget is not None:
        return budget
    if len(package.budgets) == 1:
        return package.budgets[0]
    have = f"has budgets {package.budgets}" if package.budgets else "has no budget"
    raise UsageError(f"package {package.package_id!r} {have}; give --budget")


def run(args: argparse.Namespace) -> int:
    from ..model.estimates import with_group_capacity

    if args.path == "-" and args.store == "-":
        raise UsageError("PACKAGE and --store cannot both be read from stdin")
    package = with_group_capacity(load_one(args.path), args.group_capacity)
    budget = args.budget
    if args.ids is not None:
        ids = resolve_ids(package, args.ids)
    else:
        ids, stated = read_store(args.store, package, budget)
        budget = stated if budget is None else budget  # a result record's own budget
    result = score(package, ids, the_budget(package, budget), opt=args.opt)
    writers = _estimated_writers(package, result, args.estimator) if args.estimator else {}
    if args.json:
        print_json_line({**result.to_record(), **({"writers": writers} if writers else {})})
        return 0
    ratio = "-" if result.ratio is None else f"{result.ratio:.4f}"
    lines = {
        "package": result.package_id,
        "budget": f"{result.budget:g}",
        "store": json.dumps(list(result.selected)),
        "cost": f"{result.cost:g}",
        "value": f"{result.value:.6g}",
        "OPT": f"{result.opt:.6g}",
        "ratio": ratio,
        "feasible": "yes" if result.feasible else f"no: {result.reason}",
    }
    for name, entry in writers.items():
        lines[name] = "-" if entry["ratio"] is None else f"{entry['ratio']:.4f} (value {entry['value']:.6g})"
    width = max(map(len, lines))
    for key, value in lines.items():
        print(f"{key.ljust(width)}  {value}")
    return 0


def _estimated_writers(package: Package, result: Any, estimator: str) -> dict[str, Any]:
    from ..evaluate.baselines import ESTIMATED_WRITERS, writer_scores
    from ..evaluate.estimators import load_estimator

    return writer_scores(package, result.budget, ESTIMATED_WRITERS, opt=result.opt,
                         estimator=load_estimator(estimator))
