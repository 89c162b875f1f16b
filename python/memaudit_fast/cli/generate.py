"""memaudit generate: MEMAUDIT-Small synthetic packages (one .json, or a .jsonl set)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..model.io import save_package
from ..model.jsonio import dumps
from ..model.package import Package
from ..model.sets import is_jsonl, write_package_set
from ..suites.costs import COST_MODELS
from ..suites.small import DISTRIBUTIONS, generate_set
from .common import add_subparser, number_list


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = add_subparser(
        subparsers, "generate",
        "Generate MEMAUDIT-Small synthetic packages (one .json or a .jsonl set).",
        "memaudit generate --distribution density_trap --seed 0 --count 100 --out trap.jsonl",
    )
    p.description = (
        "Generate MEMAUDIT-Small packages from hidden event graphs (entities whose attributes "
        "change over time). Each package is fixed by (distribution, seed, scale): the same "
        "arguments always give the same package. --out FILE.json writes one package; "
        "--out SET.jsonl (or .jsonl.gz) writes a set: seeds S..S+N-1 with --count N, and every "
        "distribution with --distribution all. Distributions: " + ", ".join(DISTRIBUTIONS) + ". "
        "Without budget options the budgets are the paper's 2,4,8,16 words (rescaled to the "
        "other cost models). An existing output is never replaced unless --force."
    )
    p.add_argument("--distribution", required=True, metavar="NAME",
                   choices=[*DISTRIBUTIONS, "all"],
                   help="stress distribution, or 'all' for a set over every distribution")
    p.add_argument("--seed", type=int, required=True, metavar="S", help="first seed (>= 0)")
    p.add_argument("--count", type=int, default=1, metavar="N",
                   help="number of seeds S..S+N-1 (N > 1 needs a .jsonl output); default 1")
    p.add_argument("--scale", type=int, default=1, metavar="K",
                   help="multiply entities and experiences by K (1..100 typical); default 1")
    p.add_argument("--cost-model", choices=sorted(COST_MODELS), default="words",
                   help="words: whitespace words; bytes: 8 + ceil(utf8 bytes / 24); tokens: "
                        "regex subword count. Default words")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--budgets", type=number_list, metavar="B,...",
                       help="absolute budgets in cost units, e.g. 2,4,8,16")
    group.add_argument("--budget-fracs", type=number_list, metavar="F,...",
                       help="budgets as fractions of each package's total candidate cost "
                            "(floored), e.g. 0.05,0.1")
    p.add_argument("--out", required=True, metavar="FILE.json|SET.jsonl|-",
                   help="output path, or - for JSON lines on stdout")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    p.add_argument("--json", action="store_true", help="report what was written as one JSON line")
    p.set_defaults(run=run)
    return p


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if args.count < 1:
        raise UsageError(f"--count {args.count}: expected a number >= 1")
    if args.seed < 0:
        raise UsageError(f"--seed {args.seed}: expected a number >= 0")
    if args.out == "-":
        packages = generate_set(args.distribution, range(args.seed, args.seed + args.count), scale=args.scale,
                                cost_model=args.cost_model, budgets=args.budgets, budget_fracs=args.budget_fracs)
        for pkg in _validated(packages):
            sys.stdout.write(dumps(pkg.data, indent=None) + "\n")
        return 0
    as_set = is_jsonl(out)
    if not as_set and not out.name.endswith(".json"):
        raise UsageError(f"--out {out}: expected a name ending in .json, .jsonl or .jsonl.gz")
    if not as_set and (args.count > 1 or args.distribution == "all"):
        raise UsageError(
            f"--out {out}: several packages need a set file ending in .jsonl or .jsonl.gz"
        )
    seeds = range(args.seed, args.seed + args.count)
    packages = generate_set(args.distribution, seeds, scale=args.scale, cost_model=args.cost_model,
                            budgets=args.budgets, budget_fracs=args.budget_fracs)
    if as_set:
        written = write_package_set(_validated(packages), out, overwrite=args.force)
        if args.json:
            print(json.dumps({"written": str(out), "packages": written}))
        else:
            print(f"wrote {written} packages to {out}")
    else:
        pkg = next(_validated(packages))
        save_package(pkg, out, layout="json", overwrite=args.force)
        if args.json:
            print(json.dumps({"written": str(out), "packages": 1, "package_id": pkg.package_id}))
        else:
            print(f"wrote {out} ({pkg.package_id}: {len(pkg.candidates)} candidates, "
                  f"budgets {pkg.data['budgets']})")
    return 0


def _validated(packages: Iterator[dict[str, Any]]) -> Iterator[Package]:
    # A generator bug must surface as an error here, not in a user's later solve.
    for data in packages:
        yield Package.from_dict(data)
