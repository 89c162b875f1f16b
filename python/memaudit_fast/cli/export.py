"""memaudit export: results JSONL -> Parquet."""

from __future__ import annotations

import argparse
from typing import Any

from ..results.export import export_parquet
from .common import add_subparser


def add_parser(subparsers: Any) -> None:
    p = add_subparser(
        subparsers, "export",
        "Export a results file to Parquet (one row per record; writers and certificate fields "
        "flattened into columns). Needs pip install 'memaudit_fast[parquet]'.",
        "memaudit export results.jsonl results.parquet",
    )
    p.add_argument("results", metavar="RESULTS.jsonl")
    p.add_argument("out", metavar="OUT.parquet")
    p.add_argument("--force", action="store_true", help="replace an existing OUT")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    rows = export_parquet(args.results, args.out, overwrite=args.force)
    print(f"wrote {rows} rows to {args.out}")
    return 0
