"""memaudit info: counts, budgets and cost totals of a package."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..model.artifact import is_artifact_dir
from ..model.compiled import compile_package
from ..model.sets import is_jsonl
from .common import add_checksum_flag, add_subparser, apply_checksum_flag, load_one


def add_parser(subparsers: Any) -> None:
    p = add_subparser(
        subparsers, "info",
        "Show a package's counts, budgets, costs, weights rule and saturation.",
        "memaudit info package.json --json",
    )
    p.add_argument("path", metavar="PATH", help="a package file or artifact directory (- for stdin)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_checksum_flag(p)
    p.set_defaults(run=run)


def package_info(path: str) -> dict[str, Any]:
    p = Path(path)
    if is_jsonl(p) or (p.is_dir() and not is_artifact_dir(p)):
        raise UsageError(f"{path} is a package set; info takes one package (a .json file or an "
                         "artifact directory): use 'memaudit validate' for a set")
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
        "min_cost": float(compiled.cost.min()) + 0.0,  # + 0.0: a cost written -0.0 is 0
        "max_cost": float(compiled.cost.max()) + 0.0,
        "total_weight": float(compiled.weight.sum()),
        "weights_rule": pkg.weights_rule,
        "saturation": pkg.saturation_name,
        "group_capacity": int(compiled.group_capacity),
        "cost_model": pkg.data.get("cost_model"),
        "representations": dict(sorted(reps.items())),
    }


def run(args: argparse.Namespace) -> int:
    apply_checksum_flag(args)
    info = package_info(args.path)
    if args.json:
        print(json.dumps(info))
        return 0
    width = max(len(k) for k in info)
    for key, value in info.items():
        print(f"{key.ljust(width)}  {value}")
    return 0
