"""memaudit report: PNG figures and an HTML page from a results file."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..model.jsonio import path_label
from ..results.report import make_report
from .common import add_force, add_subparser


def add_parser(subparsers: Any) -> None:
    p = add_subparser(
        subparsers, "report",
        "Draw budget-sweep curves, a stress x writer heatmap, ablation curves, external-system "
        "diagnostics and solver time against size from a results file (figures appear when the "
        "records hold their data), plus an index.html with each figure's numbers as a table. "
        "With --budget-fracs results the budget axis is the fraction of each package's total cost. "
        "RESULTS - reads stdin; a package set or other non-results file is refused (exit 2). "
        "Needs pip install 'memaudit_fast[report]'.",
        "memaudit report results.jsonl --out report/",
    )
    p.add_argument("results", metavar="RESULTS.jsonl", help="results file (- for stdin)")
    p.add_argument("--out", required=True, help="output directory (must not exist, unless --force)")
    add_force(p, "an earlier report in --out, only when it holds nothing but the report's own files "
                 "(index.html and its PNG figures); a directory holding any other file is refused (exit 2) "
                 "and left unchanged")
    p.add_argument("--json", action="store_true", help="list the files written as one JSON line")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    written = make_report(args.results, args.out, force=args.force)
    if args.json:
        print(json.dumps({"written": [str(path) for path in written]}))
    for path in [] if args.json else written:
        print(f"wrote {path_label(path)}")
    return 0
