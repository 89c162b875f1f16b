"""memaudit validate: check packages and package sets without solving anything."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..model.jsonio import escape_controls, path_label
from ..model.package import MAX_ERRORS
from .common import (
    EXIT_BAD_INPUT,
    EXIT_OK,
    add_checksum_flag,
    add_subparser,
    apply_checksum_flag,
    print_json_line,
    read_entries,
)


def add_parser(subparsers: Any) -> None:
    p = add_subparser(
        subparsers, "validate",
        "Validate packages (single-file JSON, artifact directories, JSONL sets, directories). "
        f"Every error of a package is reported (up to {MAX_ERRORS}), each with its record, field, "
        "what was found and what was expected; every entry of a directory that is not read is "
        "reported too. Exit code: 0 all valid, 2 some input is invalid.",
        "memaudit validate package.json artifact_dir/ set.jsonl.gz",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="packages or sets (- for stdin)")
    p.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    add_checksum_flag(p)
    p.add_argument("--json", action="store_true",
                   help="one JSON line per package on stdout: source, package_id, valid, error")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    apply_checksum_flag(args)
    bad = good = 0
    for entry in read_entries(args.paths):
        if args.json:
            print_json_line({"source": entry.label, "valid": entry.error is None,
                             "package_id": entry.package.package_id if entry.package is not None else None,
                             "error": None if entry.error is None else str(entry.error),
                             "errors": [] if entry.error is None else [str(e) for e in entry.error.errors]})
            bad += entry.error is not None
            good += entry.error is None
            continue
        if entry.error is not None:
            bad += 1
            errors = entry.error.errors
            for error in errors:
                print(f"invalid: {escape_controls(str(error))}", file=sys.stderr)
            if entry.error.truncated:
                print(f"invalid: {escape_controls(entry.label)}: (the first {len(errors)} errors; fix these and run "
                      "validate again for the rest)", file=sys.stderr)
        else:
            good += 1
            if not args.quiet:
                assert entry.package is not None
                print(f"ok: {escape_controls(entry.label)} ({escape_controls(entry.package.package_id)})")
    if good == bad == 0:  # an empty set, as an empty file or directory: nothing to vouch for
        print(f"invalid: no packages found in {', '.join(map(path_label, args.paths))} (a package .json, an artifact "
              "directory, a .jsonl set, or a directory holding them)", file=sys.stderr)
        bad = 1
    if not args.quiet and not args.json:
        print(f"{good} valid, {bad} invalid")
    return EXIT_BAD_INPUT if bad else EXIT_OK
