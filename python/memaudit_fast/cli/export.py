"""memaudit export: a results file as a table (Parquet, Feather, CSV, TSV or JSON lines)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..model.jsonio import path_label
from ..results.export import FORMATS, export_results
from .common import add_subparser


def add_parser(subparsers: Any) -> None:
    p = add_subparser(
        subparsers, "export",
        "Export a results file (memaudit.result/1 JSONL from batch, solve --json, sweep --json "
        "or score-store --json) as a table with every field kept: one row per record, each "
        "writer's fields as writer_<name>_<field> columns (--layout wide, the default), or one row "
        "per (package, budget, writer) as memaudit_fast.read_results gives (--layout long); the "
        "columns are documented in memaudit_fast.results.table. The format is "
        f"the one OUT's suffix names ({', '.join(FORMATS)}); CSV and TSV write lists as JSON "
        "arrays. '-' reads RESULTS from stdin or writes OUT to stdout (then give --format). A "
        "package set, or anything but result records, is refused (exit 2). Needs "
        "pip install 'memaudit_fast[parquet]'.",
        "memaudit export results.jsonl results.csv",
    )
    p.add_argument("results", metavar="RESULTS.jsonl", help="results file, or - for stdin")
    p.add_argument("out", metavar="OUT", help="output file (.parquet, .csv, ...), or - for stdout")
    p.add_argument("--format", choices=sorted(set(FORMATS.values())),
                   help="output format (default: from OUT's suffix; needed with OUT -)")
    p.add_argument("--layout", choices=["wide", "long"], default="wide",
                   help="wide: one row per record (default); long: one row per (package, budget, writer)")
    p.add_argument("--force", action="store_true", help="replace an existing OUT")
    p.add_argument("--json", action="store_true", help="report the row count as one JSON line")
    p.add_argument("--quiet", "-q", action="store_true", help="do not report the row count")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    rows = export_results(args.results, args.out, fmt=args.format, layout=args.layout, overwrite=args.force)
    where = "stdout" if args.out == "-" else args.out
    stream = sys.stderr if args.out == "-" else sys.stdout
    if args.json:
        print(json.dumps({"rows": rows, "out": where}), file=stream)
    elif not args.quiet:
        print(f"wrote {rows} rows to {path_label(where)}", file=stream)
    return 0
