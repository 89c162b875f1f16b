"""memaudit convert: single-file JSON <-> artifact directory."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import UsageError
from ..model.io import save_package
from ..model.jsonio import dumps
from .common import add_subparser, load_one


def add_parser(subparsers: Any) -> None:
    p = add_subparser(
        subparsers, "convert",
        "Convert a package between the single-file layout (.json) and the artifact directory "
        "layout. The output layout follows DST: a name ending in .json is single-file, anything "
        "else an artifact directory. Never writes over an existing path unless --force (files only).",
        "memaudit convert artifact_dir/ package.json",
    )
    p.add_argument("src", metavar="SRC", help="package file or artifact directory (- for stdin)")
    p.add_argument("dst", metavar="DST", help="output file or directory (- for single-file JSON on stdout)")
    p.add_argument("--layout", choices=["json", "artifact"], help="force the output layout")
    p.add_argument("--force", action="store_true", help="replace an existing DST file")
    p.add_argument("--json", action="store_true", help="report what was written as one JSON line")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    pkg = load_one(args.src)
    if args.dst == "-":
        if args.layout == "artifact":
            raise UsageError("an artifact directory cannot go to stdout; give a directory name")
        sys.stdout.write(dumps(pkg.data) + "\n")
        return 0
    out = save_package(pkg, args.dst, layout=args.layout, overwrite=args.force)
    if args.json:
        print(json.dumps({"written": str(out), "package_id": pkg.package_id}))
    else:
        print(f"wrote {out} ({pkg.package_id})")
    return 0
