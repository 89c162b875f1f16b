"""memaudit batch: score package sets in parallel, resumably."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..experiments.batch import BACKENDS, BatchOptions, BatchSummary, run_batch
from ..experiments.batch_resume import format_number
from ..experiments.batch_scoring import BATCH_ALONE_SECONDS
from ..model.jsonio import check_output_path
from ..progress import Progress
from .common import (
    EXIT_INTERNAL,
    WriterNames,
    add_subparser,
    group_capacity,
    name_list,
    number_list,
)

EXIT_SOME_FAILED = 3
EXIT_INTERRUPTED = 130


def add_parser(subparsers: Any) -> None:
    p = add_subparser(
        subparsers, "batch",
        "Score every package of one or more sets (.jsonl, .jsonl.gz, directories) and append one "
        "memaudit.result/1 line per (package, budget) to --out. Without budget options each "
        "package's own budgets are used. Records are keyed by the package's content and the "
        "options: --resume continues a killed or interrupted run (Ctrl-C writes what finished), "
        "re-solves packages whose content changed, and refuses other options than the file's. "
        "One run writes a file at a time. "
        f"Exit code: 0 all scored, {EXIT_SOME_FAILED} finished but some packages failed (their "
        f"error records name the cause) or a certificate asked for disagrees or could not be made, "
        f"{EXIT_INTERRUPTED} interrupted, 2 bad options or input (nothing done), "
        f"{EXIT_INTERNAL} a worker process died (what finished is kept; --resume continues) or an internal error.",
        "memaudit batch small.jsonl.gz --out results.jsonl --budgets 2,4,8,16 --writers gvt,density_only --workers 2",
    )
    p.add_argument("sets", nargs="+", metavar="SET", help="package sets (.jsonl, .jsonl.gz), packages, directories; - for a JSONL set on stdin")
    p.add_argument("--out", required=True, help="results JSONL file (appended with --resume)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--budgets", type=number_list, help="absolute budgets, e.g. 2,4,8,16")
    group.add_argument("--budget-fracs", type=number_list,
                       help="budgets as fractions of each package's total candidate cost, e.g. 0.05,0.1")
    p.add_argument("--writers", type=name_list, action=WriterNames, default=[],
                   help="writers to score, each once, e.g. gvt,greedy,density_only")
    p.add_argument("--certify", default="none", choices=["none", "auto", "highs", "gurobi"],
                   help="certify every optimum with a MILP (slow; default none)")
    p.add_argument("--time-limit", type=float, help="seconds per (package, budget) solve")
    p.add_argument("--node-limit", type=int, help="nodes per solve")
    p.add_argument("--group-capacity", type=group_capacity, metavar="K",
                   help="candidates a group may hold (overrides objective.group_capacity)")
    p.add_argument("--estimator", metavar="MODEL.json|embed",
                   help="value estimates for the estimated writers where a package has none")
    p.add_argument("--finish", choices=["auto", "none"], default="auto",
                   help=f"auto: a budget the branch-and-bound has not proven after {BATCH_ALONE_SECONDS:g} s is solved as "
                        "memaudit solve does, with HiGHS racing it; none: the branch-and-bound alone "
                        "(the same store on every run). Either way records state OPT or proven bounds, "
                        "so a --resume may change it")
    p.add_argument("--workers", type=int, help="parallel workers (default: all cores)")
    p.add_argument("--backend", default="local", choices=list(BACKENDS),
                   help="local = worker processes on this machine; ray = Ray tasks "
                        "(pip install 'memaudit_fast[ray]'); threads, serial")
    p.add_argument("--ray-address",
                   help="with --backend ray: address of a running Ray cluster, e.g. ray://head:10001 "
                        "or auto (default: start a local Ray for this run)")
    p.add_argument("--chunk-size", type=int,
                   help="packages per task (default 32 for local, 256 for ray)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--resume", action="store_true", help="continue an existing --out file")
    mode.add_argument("--force", action="store_true", help="replace an existing --out (and --parquet) file")
    p.add_argument("--parquet", help="also export all records to this Parquet file at the end")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.set_defaults(run=run)


def resume_command(args: argparse.Namespace) -> str:
    """The command line that continues this run."""
    words = ["memaudit", "batch", *args.sets, "--out", args.out]
    for flag, value in (("--budgets", args.budgets), ("--budget-fracs", args.budget_fracs)):
        if value:
            words += [flag, ",".join(format_number(v) for v in value)]  # every digit: see format_number
    if args.writers:
        words += ["--writers", ",".join(args.writers)]
    for flag, value in (("--certify", None if args.certify == "none" else args.certify),
                        ("--time-limit", args.time_limit), ("--node-limit", args.node_limit),
                        ("--group-capacity", args.group_capacity), ("--estimator", args.estimator),
                        ("--finish", None if args.finish == "auto" else args.finish),
                        ("--workers", args.workers), ("--backend", None if args.backend == "local" else args.backend),
                        ("--ray-address", args.ray_address), ("--chunk-size", args.chunk_size),
                        ("--parquet", args.parquet)):
        if value is not None:
            words += [flag, str(value)]
    return shlex.join([*words, "--resume"])


def _check_parquet(args: argparse.Namespace) -> None:
    """Refuse a --parquet path that the export at the end would refuse, before any work."""
    if not args.parquet:
        return
    parquet = Path(args.parquet)
    from ..results.export import FORMATS

    named = next((kind for suffix, kind in FORMATS.items() if parquet.name.lower().endswith(suffix)), "parquet")
    if named != "parquet":
        raise UsageError(f"--parquet {parquet} names a {named} file, and --parquet writes Parquet; give a name "
                         f"ending in .parquet, or export the results later: memaudit export {args.out} {parquet}")
    if parquet.is_symlink():
        raise UsageError(f"--parquet {parquet} is a symbolic link; give the path of the file itself")
    if parquet.exists() and not args.force:
        raise UsageError(
            f"--parquet {parquet} already exists; choose another path, pass --force to replace it "
            "(without --resume), or export later with 'memaudit export'"
        )
    check_output_path(parquet, inputs=(Path(args.out), *(Path(s) for s in args.sets)), overwrite=True)
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise UsageError("--parquet needs pyarrow: pip install 'memaudit_fast[parquet]'") from None


def _rate(rate: float) -> str:
    """Packages per second to three significant figures at most: large packages go at a few
    a second or less, and '0 packages/s' said nothing."""
    return f"{rate:.0f}" if rate >= 100 or rate == 0 else f"{rate:.3g}"


def _report(summary: BatchSummary, out: str) -> None:
    rate = summary.packages / summary.seconds if summary.seconds > 0 else 0.0
    notes = []
    if summary.skipped:
        notes.append(f"{summary.skipped} already done")
    if summary.retried:
        notes.append(f"{summary.retried} that had failed before retried")
    if summary.duplicates:
        notes.append(f"{summary.duplicates} repeated members scored once")
    if summary.truncated_tail:
        notes.append("dropped an incomplete last line")
    print(
        f"{summary.packages} packages scored ({summary.records} records, {summary.failed} failed"
        + "".join(f", {n}" for n in notes)
        + f") in {summary.seconds:.2f}s ({_rate(rate)} packages/s) -> {out}",
        file=sys.stderr,
    )
    moved = summary.compaction
    if moved is not None and moved.moved_records:
        print(f"  note: {moved.moved_members} packages with records in {out} are no longer in the set (changed "
              f"or removed); their {moved.moved_records} records were moved to {moved.moved_to}", file=sys.stderr)
    if summary.compaction_failed:
        print(f"  note: {summary.stale} packages with records in {out} are no longer in the set, and their records "
              f"could not be moved aside ({summary.compaction_failed}); {out} holds them beside the new ones",
              file=sys.stderr)
    if moved is not None and moved.relabelled:
        print(f"  note: {moved.relabelled} records in {out} now give the place their package has in the set "
              "(source)", file=sys.stderr)
    if moved is not None and moved.reordered:
        print(f"  note: {moved.reordered} records in {out} were put in the set's order (as a fresh run on it "
              "writes them)", file=sys.stderr)
    for failure in summary.failures[:10]:
        print(f"  failed: {failure}", file=sys.stderr)
    if summary.failed > 10:
        print(f"  ... {summary.failed - 10} more failed packages (status 'error' in {out})", file=sys.stderr)


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
        finish=None if args.finish == "none" else "auto",
    )
    if args.ray_address and args.backend != "ray":
        raise UsageError("--ray-address needs --backend ray")
    _check_parquet(args)
    with Progress("batch", unit="package", quiet=args.quiet) as progress:
        summary = run_batch(
            args.sets, args.out, options, workers=args.workers, backend=args.backend,
            resume=args.resume, overwrite=args.force, chunk_size=args.chunk_size,
            ray_address=args.ray_address, progress=progress,
        )
        if summary.interrupted:
            progress.close(failed=True)  # "stopped", not "done"
    _report(summary, args.out)
    if summary.lost_worker:
        print(f"memaudit batch: a worker process died (killed, for example by the system when memory ran out); "
              f"every finished package is in {args.out}. Continue with (fewer --workers use less memory):\n"
              f"  {resume_command(args)}", file=sys.stderr)
        return EXIT_INTERNAL
    if summary.interrupted:
        print(f"memaudit batch: interrupted; every finished package is in {args.out}. Continue with:\n"
              f"  {resume_command(args)}", file=sys.stderr)
        return EXIT_INTERRUPTED
    if args.parquet:
        from ..results.export import export_parquet

        Path(args.parquet).parent.mkdir(parents=True, exist_ok=True)
        export_parquet(args.out, args.parquet, overwrite=True)
    unverified = _certificates_short(args.out) if options.certify != "none" else 0
    return EXIT_SOME_FAILED if summary.failed or unverified else 0


def _certificates_short(out: str) -> int:
    """How many records of the results file hold a certificate that disagrees or could not be
    made (a MILP stopped by its time limit, say), said on stderr: as for solve --certify, the
    run then ends with exit 3."""
    import orjson

    disagree = unmade = 0
    with open(out, "rb") as handle:
        for line in handle:
            if b'"certificate"' not in line:
                continue
            certificate = orjson.loads(line).get("certificate")
            if isinstance(certificate, dict):
                disagree += certificate.get("agrees") is False
                unmade += certificate.get("agrees") is None
    if disagree or unmade:
        print(f"memaudit batch: {disagree} certificate(s) disagree, {unmade} could not be made (their "
              f"'certificate' in {out} says why)", file=sys.stderr)
    return disagree + unmade
