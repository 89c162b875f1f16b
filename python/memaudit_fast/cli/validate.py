"""memaudit validate: check packages and package sets without solving anything."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..model.sets import iter_set_entries
from .common import add_subparser


def add_parser(subparsers: Any) -> None:
    p = add_subparser(
        subparsers, "validate",
        "Validate packages (single-file JSON, artifact directories, JSONL sets, directories).",
        "memaudit validate package.json artifact_dir/ set.jsonl.gz",
    )
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    bad = good = 0
    for entry in iter_set_entries(args.paths):
        if entry.error is not None:
            bad += 1
            print(f"invalid: {entry.error}", file=sys.stderr)
        else:
            good += 1
            if not args.quiet:
                assert entry.package is not None
                print(f"ok: {entry.label} ({entry.package.package_id})")
    if not args.quiet:
        print(f"{good} valid, {bad} invalid")
    return 2 if bad else 0
