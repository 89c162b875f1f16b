"""memaudit convert: single-file JSON <-> artifact directory."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..model.io import load_package, save_package
from ..model.jsonio import OutputPath
from .common import add_checksum_flag, add_subparser, apply_checksum_flag


def add_parser(subparsers: Any) -> None:
    p = add_subparser(
        subparsers, "convert",
        "Convert a package between the single-file layout (.json) and the artifact directory "
        "layout. The output layout follows DST: a name ending in .json is single-file, anything "
        "else an artifact directory. Never writes over an existing path unless --force (an existing "
        "directory only when it is an artifact package), never over SRC, never through a symbolic "
        "link; the output appears complete or not at all.",
        "memaudit convert artifact_dir/ package.json",
    )
    p.add_argument("src", metavar="SRC")
    p.add_argument("dst", metavar="DST")
    p.add_argument("--layout", choices=["json", "artifact"], help="force the output layout")
    p.add_argument("--force", action="store_true", help="replace an existing DST")
    add_checksum_flag(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    apply_checksum_flag(args)
    layout = args.layout or ("json" if args.dst.endswith(".json") else "artifact")
    # The output is checked before the input is read: a refusal costs nothing.
    OutputPath(args.dst, inputs=(Path(args.src),), force=args.force,
               kind="file" if layout == "json" else "dir", marker="candidate_memories.jsonl").check()
    pkg = load_package(args.src)
    out = save_package(pkg, args.dst, layout=args.layout, overwrite=args.force)
    print(f"wrote {out} ({pkg.package_id})")
    return 0
