"""memaudit sweep: OPT and every writer's ratio over a range of budgets."""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from statistics import mean
from typing import Any

from ..errors import MemauditError, UsageError
from ..evaluate.ablation import ablate, ablation_block, dropped_representations, parse_drop
from ..evaluate.baselines import BASELINE_WRITERS, check_writers, writer_context, writer_scores
from ..model.package import Package
from ..results.records import error_record, failed_package_id
from ..solve.certify import SOLVERS, certify
from .common import (
    WriterNames,
    add_subparser,
    failure_text,
    group_capacity,
    name_list,
    number_list,
    packages_exit_code,
    print_json_line,
    print_table,
    read_entries,
)
from .solve import check_certifier, sigterm_as_interrupt

EXIT_SOME_FAILED = 3


def add_parser(subparsers: Any) -> None:
    p = add_subparser(
        subparsers, "sweep",
        "Solve each package at several budgets and score every baseline writer as F(X)/OPT: one "
        "memaudit.result/1 line per (package, budget) with --json (its 'writers' block holds each "
        "writer's value, ratio and store), else a table with a mean row per budget. --budget-fracs "
        "are fractions of each package's total candidate cost (B = frac * sum of all costs). "
        f"Writers: {', '.join(BASELINE_WRITERS)}. --drop adds the OPT without those candidate families "
        "as a fraction of full OPT ('tombstone', 'update'; the artifact's 'compound_update' "
        f"too). Exit code: 0 ok, {EXIT_SOME_FAILED} finished, but some package failed, 2 bad input, "
        "130 interrupted (the records printed are kept), 1 internal error.",
        "memaudit sweep small.jsonl.gz --budgets 2,4,8,16 --writers gvt,density_only --drop tombstone,update",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="packages or package sets (- for stdin)")
    budgets = p.add_mutually_exclusive_group()
    budgets.add_argument("--budgets", type=number_list, help="absolute budgets, e.g. 2,4,8,16")
    budgets.add_argument("--budget-fracs", type=number_list,
                         help="fractions of each package's total candidate cost, e.g. 0.02,0.05,0.1,0.2")
    p.add_argument("--writers", type=name_list, action=WriterNames, default=list(BASELINE_WRITERS),
                   help="comma-separated writers, each once (default: all)")
    p.add_argument("--drop", type=name_list, help="candidate families to ablate, e.g. tombstone,update")
    p.add_argument("--certify", default="none", choices=["none", *SOLVERS],
                   help="certify each optimum with a MILP (default none)")
    p.add_argument("--time-limit", type=float, help="seconds per exact solve")
    p.add_argument("--node-limit", type=int, help="nodes per exact solve")
    p.add_argument("--seed", type=int, default=0, help="seed of the random writer")
    p.add_argument("--group-capacity", type=group_capacity, metavar="K", help="candidates a group may hold (overrides objective.group_capacity; default the package's, else 1)")
    p.add_argument("--estimator", metavar="MODEL.json|embed",
                   help="value estimates for estimated_greedy/estimated_gvt where a package has none "
                        "(a memaudit train-estimator model, or embed); adds them to the default writers")
    p.add_argument("--json", action="store_true", help="print JSONL records instead of a table")
    p.set_defaults(run=run)


def budgets_for(package: Package, args: argparse.Namespace) -> list[float]:
    """The budgets of one package: given, fractions of its total cost, or its own."""
    if args.budgets:
        return [float(b) for b in args.budgets]
    if args.budget_fracs:
        total = package.total_cost()
        return [float(f) * total for f in args.budget_fracs]
    if not package.budgets:
        raise UsageError(
            f"package {package.package_id!r} has no budgets; give --budgets or --budget-fracs"
        )
    return package.budgets


def sweep_package(package: Package, args: argparse.Namespace) -> list[dict[str, Any]]:
    """One memaudit.result/1 record per budget, with writers, ablation and certificate."""
    from ..model.estimates import with_group_capacity
    from ..solve.exact import solve

    package = with_group_capacity(package, args.group_capacity)
    budgets = budgets_for(package, args)
    ctx = writer_context(package, getattr(args, "estimator_obj", None))
    results = solve(ctx.compiled, budgets=budgets, time_limit=args.time_limit, node_limit=args.node_limit)
    ablations = None
    if args.drop:
        args.seen_representations.update(str(c.get("representation", "")) for c in package.candidates)
        ablations = ablate(package, budgets, args.drop, full_opt=[r.value for r in results], time_limit=args.time_limit)
    records = []
    for k, result in enumerate(results):
        record = result.to_record()
        record["writers"] = writer_scores(ctx, result.budget, args.writers, opt=result.value, seed=args.seed)
        if ablations is not None:
            record["ablation"] = ablation_block([ablations[k]])
        if args.certify != "none":
            record["certificate"] = certify(ctx.compiled, result, args.certify, time_limit=args.time_limit).to_dict()
        if args.budget_fracs:
            record["budget_frac"] = float(args.budget_fracs[k])
        records.append(record)
    return records


def run(args: argparse.Namespace) -> int:
    if args.estimator is not None:
        from ..evaluate.baselines import ESTIMATED_WRITERS
        from ..evaluate.estimators import load_estimator

        args.estimator_obj = load_estimator(args.estimator)
        if args.writers == list(BASELINE_WRITERS):
            args.writers = [*BASELINE_WRITERS, *ESTIMATED_WRITERS]
    check_writers(args.writers)
    check_certifier(args.certify)
    if args.seed < 0:
        raise UsageError(f"--seed {args.seed}: expected a number >= 0")
    args.drop = parse_drop(args.drop) if args.drop is not None else None
    with sigterm_as_interrupt():  # SIGTERM ends a sweep as Ctrl-C does
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    args.seen_representations = set()
    failures = done = 0
    interrupted = False
    table: list[dict[str, Any]] = []
    for entry in read_entries(args.paths):
        try:
            if entry.error is not None:
                raise entry.error
            assert entry.package is not None
            records = sweep_package(entry.package, args)
        except UsageError:
            raise
        except MemauditError as exc:
            failures += 1
            known = entry.package.package_id if entry.package is not None else None
            record = error_record(str(exc), source=entry.label, package_id=failed_package_id(exc, known))
            if args.json:
                print_json_line(record)
            else:
                print(f"failed: {failure_text(entry.label, exc)}", file=sys.stderr)
            continue
        done += 1
        for record in records:
            if args.json:
                print_json_line(record)
            else:
                table.append(record)
        if any(r["status"] == "interrupted" or r.get("certificate", {}).get("status") == "interrupted"
               for r in records):
            interrupted = True  # Ctrl-C stopped a solve: the packages after it are not begun
            break
    if not args.json and (table or not interrupted):
        print_sweep_table(table, args.writers, args.drop)
    _unmatched_drops(args)
    return packages_exit_code("sweep", args.paths, interrupted=interrupted, done=done, failed=failures,
                              note="the last package's results are anytime bounds")


def print_sweep_table(records: list[dict[str, Any]], writers: list[str], drop: tuple[str, ...] | None) -> None:
    """One row per (package, budget), then the mean ratio per budget over packages."""
    label = ",".join(drop) if drop else None
    headers = ["package", "budget", "OPT", "status", *writers]
    if label:
        headers.append(f"no {label}")
    if any("certificate" in r for r in records):
        headers.append("certified")

    def cells(record: dict[str, Any]) -> list[Any]:
        row = [record["package_id"], record["budget"], record["opt"], record["status"]]
        row += [_ratio(record["writers"][w]["ratio"]) for w in writers]
        if label:
            row.append(_ratio(record["ablation"][label]["fraction_of_opt"]))
        if "certified" in headers:
            row.append({True: "yes", False: "NO", None: "-"}[record["certificate"]["agrees"]])
        return row

    rows = [cells(r) for r in records]
    # Means per budget, or per budget fraction (whose absolute budgets differ by package).
    by_budget: dict[tuple[str, float], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        key = ("frac", float(r["budget_frac"])) if "budget_frac" in r else ("", float(r["budget"]))
        by_budget[key].append(r)
    if len({r["package_id"] for r in records}) > 1:
        for (kind, budget), group in sorted(by_budget.items()):
            shown: Any = f"{budget:g} of total" if kind else budget
            row: list[Any] = [f"mean of {len(group)}", shown, mean(float(r["opt"]) for r in group), ""]
            row += [_mean_ratio(r["writers"][w]["ratio"] for r in group) for w in writers]
            if label:
                row.append(_mean_ratio(r["ablation"][label]["fraction_of_opt"] for r in group))
            if "certified" in headers:
                row.append("")
            rows.append(row)
    print_table(headers, rows)


def _ratio(value: Any) -> str:
    return "-" if value is None else f"{value:.4f}"


def _mean_ratio(values: Any) -> str:
    clean = [float(v) for v in values if v is not None]
    return _ratio(mean(clean)) if clean else "-"


def _unmatched_drops(args: argparse.Namespace) -> None:
    """Say which --drop names removed nothing from any package (a typo, likely: 'tombstones'),
    and which representations the packages have."""
    if not args.drop or not args.seen_representations:
        return
    seen = args.seen_representations
    for name in args.drop:
        if not dropped_representations([name]) & seen:
            have = ", ".join(sorted(r for r in seen if r)) or "none named"
            print(f"memaudit sweep: --drop {name}: no candidate has this representation, so it removed "
                  f"nothing (representations here: {have})", file=sys.stderr)
