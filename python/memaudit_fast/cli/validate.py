"""memaudit validate: check packages and package sets without solving anything."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import add_subparser, print_json_line, read_entries


def add_parser(subparsers: Any) -> None:
    p = add_subparser(
        subparsers, "validate",
        "Validate packages (single-file JSON, artifact directories, JSONL sets, directories).",
        "memaudit validate package.json artifact_dir/ set.jsonl.gz",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="packages or sets (- for stdin)")
    p.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    p.add_argument("--json", action="store_true",
                   help="one JSON line per package on stdout: source, package_id, valid, error")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    bad = good = 0
    for entry in read_entries(args.paths):
        if args.json:
            print_json_line({"source": entry.label, "valid": entry.error is None,
                             "package_id": entry.package.package_id if entry.package is not None else None,
                             "error": None if entry.error is None else str(entry.error)})
            bad += entry.error is not None
            good += entry.error is None
            continue
        if entry.error is not None:
            bad += 1
            print(f"invalid: {entry.error}", file=sys.stderr)
        else:
            good += 1
            if not args.quiet:
                assert entry.package is not None
                print(f"ok: {entry.label} ({entry.package.package_id})")
    if not args.quiet and not args.json:
        print(f"{good} valid, {bad} invalid")
    return 2 if bad else 0
