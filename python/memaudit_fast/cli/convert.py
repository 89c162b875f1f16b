"""memaudit convert: single-file JSON <-> artifact directory."""

from __future__ import annotations

import argparse
from typing import Any

from ..model.io import load_package, save_package
from .common import add_subparser


def add_parser(subparsers: Any) -> None:
    p = add_subparser(
        subparsers, "convert",
        "Convert a package between the single-file layout (.json) and the artifact directory "
        "layout. The output layout follows DST: a name ending in .json is single-file, anything "
        "else an artifact directory. Never writes over an existing path unless --force (files only).",
        "memaudit convert artifact_dir/ package.json",
    )
    p.add_argument("src", metavar="SRC")
    p.add_argument("dst", metavar="DST")
    p.add_argument("--layout", choices=["json", "artifact"], help="force the output layout")
    p.add_argument("--force", action="store_true", help="replace an existing DST file")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    pkg = load_package(args.src)
    out = save_package(pkg, args.dst, layout=args.layout, overwrite=args.force)
    print(f"wrote {out} ({pkg.package_id})")
    return 0
