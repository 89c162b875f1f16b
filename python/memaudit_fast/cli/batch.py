"""memaudit batch: score package sets in parallel, resumably."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..experiments.batch import BatchOptions, iter_tasks, run_batch, stderr_progress
from .common import add_subparser, name_list, number_list

EXIT_SOME_FAILED = 3


def add_parser(subparsers: Any) -> None:
    p = add_subparser(
        subparsers, "batch",
        "Score every package of one or more sets (.jsonl, .jsonl.gz, directories) and append one "
        "memaudit.result/1 line per (package, budget) to --out. Without budget options each "
        "package's own budgets are used. A killed run continues with --resume, losing nothing. "
        f"Exit code: 0 all scored, {EXIT_SOME_FAILED} finished but some packages failed (their "
        "error records name the cause), 2 bad options.",
        "memaudit batch small.jsonl.gz --out results.jsonl --budgets 2,4,8,16 --writers gvt,density_only --workers 2",
    )
    p.add_argument("sets", nargs="+", metavar="SET")
    p.add_argument("--out", required=True, help="results JSONL file (appended with --resume)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--budgets", type=number_list, help="absolute budgets, e.g. 2,4,8,16")
    group.add_argument("--budget-fracs", type=number_list,
                       help="budgets as fractions of each package's total candidate cost, e.g. 0.05,0.1")
    p.add_argument("--writers", type=name_list, default=[], help="writers to score, e.g. gvt,greedy,density_only")
    p.add_argument("--certify", default="none", choices=["none", "auto", "highs", "gurobi"],
                   help="certify every optimum with a MILP (slow; default none)")
    p.add_argument("--time-limit", type=float, help="seconds per (package, budget) solve")
    p.add_argument("--node-limit", type=int, help="nodes per solve")
    p.add_argument("--group-capacity", type=int, metavar="K",
                   help="candidates a group may hold (overrides objective.group_capacity)")
    p.add_argument("--estimator", metavar="MODEL.json|embed",
                   help="value estimates for the estimated writers where a package has none")
    p.add_argument("--workers", type=int, help="parallel workers (default: all cores)")
    p.add_argument("--backend", default="local", choices=["local", "threads", "serial", "ray"],
                   help="local = worker processes on this machine; ray = Ray tasks (pip install 'memaudit_fast[ray]')")
    p.add_argument("--ray-address", help="address of an existing Ray cluster (default: start a local Ray)")
    p.add_argument("--chunk-size", type=int, default=16, help="packages per task")
    p.add_argument("--resume", action="store_true", help="continue an existing --out file")
    p.add_argument("--force", action="store_true", help="replace an existing --out file")
    p.add_argument("--parquet", help="also export all records to this Parquet file at the end")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    options = BatchOptions(
        budgets=tuple(args.budgets) if args.budgets else None,
        budget_fracs=tuple(args.budget_fracs) if args.budget_fracs else None,
        writers=tuple(args.writers),
        certify=args.certify,
        time_limit=args.time_limit,
        node_limit=args.node_limit,
        estimator=args.estimator,
        group_capacity=args.group_capacity,
    )
    total = sum(1 for _ in iter_tasks(args.sets)) if sys.stderr.isatty() else None
    summary = run_batch(
        args.sets, args.out, options, workers=args.workers, backend=args.backend,
        resume=args.resume, overwrite=args.force, chunk_size=args.chunk_size,
        ray_address=args.ray_address, progress=stderr_progress(total),
    )
    if sys.stderr.isatty():
        sys.stderr.write("\n")
    rate = summary.packages / summary.seconds if summary.seconds > 0 else 0.0
    print(
        f"{summary.packages} packages scored ({summary.records} records, {summary.failed} failed, "
        f"{summary.skipped} already done) in {summary.seconds:.2f}s ({rate:.0f} packages/s) -> {args.out}"
        + (" [dropped an incomplete last line]" if summary.truncated_tail else ""),
        file=sys.stderr,
    )
    for failure in summary.failures[:10]:
        print(f"  failed: {failure}", file=sys.stderr)
    if args.parquet:
        from ..results.export import export_parquet

        export_parquet(args.out, args.parquet)
    return EXIT_SOME_FAILED if summary.failed else 0
