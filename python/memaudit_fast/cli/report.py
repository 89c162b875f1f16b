"""memaudit report: PNG figures and an HTML page from a results file."""

from __future__ import annotations

import argparse
from typing import Any

from ..results.report import make_report
from .common import add_force, add_subparser


def add_parser(subparsers: Any) -> None:
    p = add_subparser(
        subparsers, "report",
        "Draw budget-sweep curves, a stress x writer heatmap, ablation curves, external-system "
        "diagnostics and solver time against size from a results file (figures appear when the "
        "records hold their data), plus an index.html. Needs pip install 'memaudit_fast[report]'.",
        "memaudit report results.jsonl --out report/",
    )
    p.add_argument("results", metavar="RESULTS.jsonl")
    p.add_argument("--out", required=True, help="output directory (must not exist, unless --force)")
    add_force(p, "an earlier report in --out")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    for path in make_report(args.results, args.out, force=args.force):
        print(f"wrote {path}")
    return 0
