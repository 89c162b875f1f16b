"""memaudit demo: the built-in example end to end (solve, certify, score writers)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..model.examples import example_package_path
from .common import add_subparser, print_table

DEMO_WRITERS = ("gvt", "greedy", "density_only", "recency_raw")


def add_parser(subparsers: Any) -> None:
    p = add_subparser(
        subparsers, "demo",
        "Solve the built-in example package exactly at each of its budgets, certify every optimum "
        "with the HiGHS MILP, and score the baseline writers against it.",
        "memaudit demo --json",
    )
    p.add_argument("--json", action="store_true", help="print memaudit.result/1 lines")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ..evaluate.baselines import writer_scores
    from ..model.compiled import compile_package
    from ..solve.certify import certify
    from ..solve.exact import solve

    path = example_package_path()
    compiled = compile_package(path)
    results = solve(compiled, budgets=compiled.budgets)
    rows = []
    failed = False
    for result in results:
        record = result.to_record()
        record["certificate"] = certify(compiled, result, solver="highs").to_dict()
        record["writers"] = writer_scores(compiled, result.budget, DEMO_WRITERS, opt=result.value)
        failed |= not record["certificate"].get("agrees", False)
        if args.json:
            print(json.dumps(record))
            continue
        rows.append([result.budget, result.value, result.status, record["certificate"]["value"],
                     "yes" if record["certificate"].get("agrees") else "NO",
                     *[record["writers"][w]["ratio"] for w in DEMO_WRITERS]])
    if not args.json:
        print(f"package {compiled.package_id} ({compiled.num_candidates} candidates, {path})")
        print_table(["budget", "OPT", "status", "MILP", "agrees", *DEMO_WRITERS], rows)
    return 1 if failed else 0
