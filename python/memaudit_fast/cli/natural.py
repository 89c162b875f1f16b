"""memaudit natural: natural packages from real dialogue datasets (LoCoMo)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..model.jsonio import dumps
from ..model.package import Package
from ..model.sets import is_jsonl
from ..progress import Progress
from ..suites.costs import COST_MODELS
from ..suites.locomo import CATEGORY_NAMES, DEFAULT_BUDGET_FRACS, locomo_package, read_locomo
from ..suites.natural_out import check_out, file_names, write_packages
from .common import add_quiet, add_subparser, name_list, number_list, print_json_line


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    p = add_subparser(
        subparsers, "natural",
        "Build natural packages from a dialogue dataset. 'locomo' reads a LoCoMo-format JSON "
        "file and writes one package per conversation.",
        "memaudit natural locomo locomo10.json --out locomo.jsonl",
    )
    sources = p.add_subparsers(dest="dataset", metavar="DATASET", required=True)
    fracs = ",".join(f"{f:g}" for f in DEFAULT_BUDGET_FRACS)
    lp = add_subparser(
        sources, "locomo",
        "One package per conversation of a LoCoMo-format file.",
        "memaudit natural locomo locomo10.json --out natural/ "
        "--budgets 50,100,200",
    )
    lp.description = (
        "One package per LoCoMo conversation: experiences are the turns, evidence units the "
        "turns the QA items cite (weight = number of questions citing the turn), candidates the "
        "raw turns, the dataset's observations (facts, grouped with their turn) and the session "
        "and event summaries (partial coverage by content-word overlap, each its own group). "
        f"Budgets default to fractions {fracs} of the conversation's total raw-turn cost. "
        "Malformed evidence ids and questions without evidence are reported and skipped. "
        "--out DIR writes DIR/locomo-<sample_id>.json per conversation (the id kept to letters, "
        "digits and ._+@=-, a long one shortened with a digest), all of them or none; --out "
        "SET.jsonl one set. Existing files are never replaced unless --force, the input never."
    )
    lp.add_argument("path", metavar="PATH",
                    help="LoCoMo-format JSON file (a list of conversations)")
    lp.add_argument("--out", required=True, metavar="DIR|SET.jsonl|-",
                    help="output directory, set, or - for a JSONL set on stdout")
    lp.add_argument("--cost-model", choices=sorted(COST_MODELS), default="words",
                    help="cost of a candidate's text; default words")
    group = lp.add_mutually_exclusive_group()
    group.add_argument("--budgets", type=number_list, metavar="B,...",
                       help="absolute budgets in cost units, e.g. 50,100,200")
    group.add_argument("--budget-fracs", type=number_list, metavar="F,...",
                       help=f"budgets as fractions of the total raw-turn cost (default {fracs})")
    names = ", ".join(f"{k}={v}" for k, v in CATEGORY_NAMES.items())
    lp.add_argument("--categories", type=name_list, metavar="C,...",
                    help=f"keep only these QA categories, by number or name ({names})")
    lp.add_argument("--per-query", action="store_true",
                    help="one package per question with evidence, cut from the sessions holding it "
                         "(the paper's Natural-87 protocol; budgets 30,60,100 words by default; ids "
                         "locomo-<sample>-q<index>; see memaudit_fast.suites.locomo_queries)")
    lp.add_argument("--context", type=int, default=0, metavar="K",
                    help="--per-query: also keep K neighbouring turns each side as distractors")
    lp.add_argument("--force", action="store_true", help="replace existing output files")
    lp.add_argument("--json", action="store_true",
                    help="one JSON summary line per package (on stderr with --out -)")
    add_quiet(lp)
    lp.set_defaults(run=run)
    return p


def run(args: argparse.Namespace) -> int:
    if args.dataset != "locomo":  # argparse only offers locomo; kept for future datasets
        raise UsageError(f"unknown dataset {args.dataset!r}")
    if args.categories == []:  # "--categories ''": no question kept is never what was meant
        known = ", ".join(f"{k}={v}" for k, v in CATEGORY_NAMES.items())
        raise UsageError(f"--categories is empty; give one or more of {known}, or leave it out for all")
    if args.per_query:
        from ..suites.locomo_queries import cli_query_packages

        return cli_query_packages(args)
    if args.context:
        raise UsageError("--context needs --per-query")
    out = Path(args.out)
    if args.out != "-":
        check_out(out, source=Path(args.path), force=args.force)  # before the work, not after
    records = read_locomo(args.path)
    packages = []
    with Progress("natural locomo", len(records), unit="conversation", quiet=args.quiet) as bar:
        for i, record in enumerate(records):
            packages.append(Package.from_dict(
                locomo_package(record, cost_model=args.cost_model, budgets=args.budgets,
                               budget_fracs=args.budget_fracs, categories=args.categories,
                               source=f"{args.path}[{i}]")
            ))
            bar.update()
    if args.out == "-":
        for pkg in packages:
            sys.stdout.write(dumps(pkg.data, indent=None) + "\n")
        sys.stdout.flush()
    else:
        names = file_names([p.data["meta"]["sample_id"] for p in packages], prefix="locomo-", label="sample_id")
        write_packages(packages, out, names, source=Path(args.path), force=args.force)
        where = out if is_jsonl(out) else f"{out}/"
        print(f"wrote {len(packages)} packages to {where}", file=sys.stderr if args.json else sys.stdout)
    for pkg in packages:
        if args.json:
            _json_summary(pkg, to_stderr=args.out == "-")
        elif args.out != "-" and not args.quiet:
            _print_summary(pkg)
    return 0


def _json_summary(pkg: Package, *, to_stderr: bool) -> None:
    meta = pkg.data["meta"]
    line = {"package_id": pkg.package_id, "turns": len(pkg.experiences), "units": len(pkg.units),
            "candidates": len(pkg.candidates), "questions": len(pkg.queries), "budgets": pkg.data["budgets"],
            "repaired": meta["repaired"], "skipped": meta["skipped"]}
    if to_stderr:
        print(dumps(line, indent=None), file=sys.stderr)
    else:
        print_json_line(line)


def _print_summary(pkg: Package) -> None:
    meta = pkg.data["meta"]
    print(f"{pkg.package_id}: {len(pkg.experiences)} turns, {len(pkg.units)} evidence units, "
          f"{len(pkg.candidates)} candidates, {len(pkg.queries)} questions, "
          f"budgets {pkg.data['budgets']}")
    for entry in meta["repaired"]:
        print(f"  repaired {entry['item']} {entry['what']} {entry['value']!r} -> "
              f"{', '.join(entry['read_as'])}")
    for entry in meta["skipped"]:
        value = f" {entry['value']!r}" if "value" in entry else ""
        print(f"  skipped {entry['item']} {entry['what']}{value}: {entry['reason']}")
