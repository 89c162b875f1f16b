"""memaudit info: counts, budgets and cost totals of a package."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from typing import Any

from ..model.compiled import compile_package
from .common import add_subparser, load_one


def add_parser(subparsers: Any) -> None:
    p = add_subparser(
        subparsers, "info",
        "Show a package's counts, budgets, costs, weights rule and saturation.",
        "memaudit info package.json --json",
    )
    p.add_argument("path", metavar="PATH", help="a package file or artifact directory (- for stdin)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(run=run)


def package_info(path: str) -> dict[str, Any]:
    pkg = load_one(path)
    compiled = compile_package(pkg)
    reps = Counter(c.get("representation", "unspecified") for c in pkg.candidates)
    return {
        "package_id": pkg.package_id,
        "experiences": len(pkg.experiences),
        "units": len(pkg.units),
        "candidates": len(pkg.candidates),
        "groups": len(compiled.group_ids),
        "queries": len(pkg.queries),
        "nonzeros": int(compiled.indices.size),
        "budgets": pkg.budgets,
        "total_cost": pkg.total_cost(),
        "min_cost": float(compiled.cost.min()),
        "max_cost": float(compiled.cost.max()),
        "total_weight": float(compiled.weight.sum()),
        "weights_rule": pkg.weights_rule,
        "saturation": pkg.saturation_name,
        "cost_model": pkg.data.get("cost_model"),
        "representations": dict(sorted(reps.items())),
    }


def run(args: argparse.Namespace) -> int:
    info = package_info(args.path)
    if args.json:
        print(json.dumps(info))
        return 0
    width = max(len(k) for k in info)
    for key, value in info.items():
        print(f"{key.ljust(width)}  {value}")
    return 0
