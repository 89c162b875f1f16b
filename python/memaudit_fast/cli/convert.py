"""memaudit convert: single-file JSON <-> artifact directory."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..model.io import save_package
from ..model.jsonio import OutputPath, dumps
from .common import add_checksum_flag, add_subparser, apply_checksum_flag, load_one


def add_parser(subparsers: Any) -> None:
    p = add_subparser(
        subparsers, "convert",
        "Convert a package between the single-file layout (.json) and the artifact directory "
        "layout. The output layout follows DST: a name ending in .json is single-file, anything "
        "else an artifact directory. Never writes over an existing path unless --force (an existing "
        "directory only when it is an artifact package holding nothing but the layout's own files; "
        "any other file in it is named, exit 2, nothing changed), never over SRC, never through a "
        "symbolic link; the output appears complete or not at all.",
        "memaudit convert artifact_dir/ package.json",
    )
    p.add_argument("src", metavar="SRC", help="package file or artifact directory (- for stdin)")
    p.add_argument("dst", metavar="DST", help="output file or directory (- for single-file JSON on stdout)")
    p.add_argument("--layout", choices=["json", "artifact"], help="force the output layout")
    p.add_argument("--force", action="store_true",
                   help="replace an existing DST (a directory only when it holds the artifact layout's own "
                   "files and nothing else)")
    p.add_argument("--json", action="store_true", help="report what was written as one JSON line")
    add_checksum_flag(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    apply_checksum_flag(args)
    if args.dst != "-":
        layout = args.layout or ("json" if args.dst.endswith(".json") else "artifact")
        # The output is checked before the input is read: a refusal costs nothing. Files of an
        # existing directory that the layout does not write are refused by save_package, once the
        # package (and so its own extra files) is known.
        OutputPath(args.dst, inputs=(Path(args.src),), force=args.force,
                   kind="file" if layout == "json" else "dir", marker="candidate_memories.jsonl").check()
    pkg = load_one(args.src)
    if args.dst == "-":
        if args.layout == "artifact":
            raise UsageError("an artifact directory cannot go to stdout; give a directory name")
        sys.stdout.write(dumps(pkg.data) + "\n")
        return 0
    out = save_package(pkg, args.dst, layout=args.layout, overwrite=args.force)
    _report_not_read(pkg.meta)
    if args.json:
        print(json.dumps({"written": str(out), "package_id": pkg.package_id}))
    else:
        print(f"wrote {out} ({pkg.package_id})")
    return 0


def _report_not_read(meta: Any) -> None:
    """Name the entries of the source directory that were not read, so none is lost unsaid."""
    art = meta.get("artifact") if isinstance(meta, dict) else None
    names = art.get("not_read") if isinstance(art, dict) else None
    if isinstance(names, list) and names:
        print(f"memaudit convert: not carried over (too large to read; named in meta.artifact.not_read): "
              f"{', '.join(map(str, names))}", file=sys.stderr)
