"""memaudit solve: exact OPT(B) of packages, one memaudit.result/1 record per (package, budget)."""

from __future__ import annotations

import argparse
import contextlib
import math
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from ..errors import MemauditError, PackageError, UsageError
from ..model.compiled import CompiledPackage, compile_package
from ..model.estimates import with_group_capacity
from ..model.package import Package
from ..results.records import error_record, failed_package_id
from ..solve.certify import SOLVERS, budget_stems, certify_results
from ..solve.exact import (
    DEFAULT_HANDOFF_AFTER,
    FINISHERS,
    MAX_NODE_LIMIT,
    SolveResult,
    format_progress,
    solve,
)
from ..solve.model_files import ModelWriter
from .common import (
    add_subparser,
    failure_text,
    group_capacity,
    number_list,
    packages_exit_code,
    print_json_line,
    print_table,
    read_entries,
)

EXIT_SOME_FAILED = 3
EXIT_DISAGREES = 3  # as memaudit certify: finished, and a certificate contradicts the optimum
EXIT_INTERRUPTED = 130
#: After this many seconds without --time-limit, say once how to stop and what is kept.
LONG_SOLVE_NOTICE = 10.0
LONG_SOLVE_MESSAGE = (
    "memaudit solve: still solving after {:.0f} s. Ctrl-C (or SIGTERM) stops the search; the best "
    "store found and its proven upper bound are kept and printed (status 'interrupted'). "
    "--time-limit S caps each budget."
)


def add_parser(subparsers: Any) -> None:
    p = add_subparser(
        subparsers, "solve",
        "Solve packages exactly (branch-and-bound) at their own budgets or at --budget values. "
        "Prints a table, or with --json one memaudit.result/1 line per (package, budget): 'opt' "
        "is the best store's value, 'upper_bound' a proven bound, 'status' optimal / time_limit / "
        "node_limit / interrupted (only 'optimal' is a proof that opt = OPT). Ctrl-C stops the "
        "search and prints what was found so far. Exit code: 0 ok, "
        f"{EXIT_SOME_FAILED} finished, but some package failed, a requested certificate could not be made "
        f"or one disagrees, {EXIT_INTERRUPTED} interrupted, 2 bad input, 1 internal error. "
        "PATH - reads a package or a JSONL set from stdin.",
        "memaudit solve package.json --budget 4,8 --time-limit 10 --json",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="packages or package sets (.jsonl, .jsonl.gz, directories; - for stdin)")
    budgets = p.add_mutually_exclusive_group()
    budgets.add_argument("--budget", "--budgets", dest="budgets", type=number_list, action="append",
                         metavar="B", help="budget(s), repeatable or comma-separated: --budget 4 --budget 8, --budget 4,8")
    budgets.add_argument("--budget-fracs", type=number_list, metavar="F",
                         help="fractions of each package's total candidate cost, e.g. 0.05,0.1")
    p.add_argument("--time-limit", type=float, metavar="S", help="seconds per (package, budget)")
    p.add_argument("--node-limit", type=int, metavar="N", help="search nodes per (package, budget)")
    p.add_argument("--certify", default="none", choices=["none", *SOLVERS],
                   help="check each optimum with a MILP solver (default none)")
    p.add_argument("--group-capacity", type=group_capacity, metavar="K", help="candidates a group may hold (overrides objective.group_capacity; default the package's, else 1)")
    p.add_argument("--write-model", metavar="DIR", help="with --certify: write each MILP to DIR as .mps and .lp")
    p.add_argument("--finish", choices=["auto", *FINISHERS, "none"], default="auto",
                   help="race this MILP solver against the branch-and-bound on a budget not proven after "
                        "--handoff-after seconds, in a second thread, on the candidates the root left "
                        "open once it is done; the first proof wins (proved_by says which). Default "
                        "auto: highs, unless --node-limit is given; none: the branch-and-bound alone")
    p.add_argument("--handoff-after", type=float, default=DEFAULT_HANDOFF_AFTER, metavar="S",
                   help=f"seconds of branch-and-bound per budget before --finish starts (default {DEFAULT_HANDOFF_AFTER:g})")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="solver log on stderr about once a second: nodes, incumbent, bound, gap, elapsed")
    p.add_argument("--json", action="store_true", help="print JSONL records instead of a table")
    p.set_defaults(run=run)


class SolveLog:
    """The progress callback of the CLI: the solver log (--verbose) and a one-time notice of
    how to stop a long solve (no --time-limit)."""

    def __init__(self, verbose: bool, notice: bool) -> None:
        self.verbose = verbose
        self.notice = notice
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        if notice:
            # Also when nothing calls back for a while (a MILP certifying, a long root): a timer.
            self._timer = threading.Timer(LONG_SOLVE_NOTICE, self._say)
            self._timer.daemon = True
            self._timer.start()

    def __call__(self, line: Any) -> None:
        if self.verbose:
            print(format_progress(line), file=sys.stderr, flush=True)
        if self.notice and time.monotonic() - self.started >= LONG_SOLVE_NOTICE:
            self._say()

    def _say(self) -> None:
        with self._lock:
            if not self.notice:
                return
            self.notice = False
        print(LONG_SOLVE_MESSAGE.format(LONG_SOLVE_NOTICE), file=sys.stderr, flush=True)

    def close(self) -> None:
        """The command is done: no notice after it."""
        with self._lock:
            self.notice = False
        if self._timer is not None:
            self._timer.cancel()


def _terminate(signum: int, frame: Any) -> None:
    # SIGTERM behaves like Ctrl-C: the search answers with status "interrupted".
    raise KeyboardInterrupt


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While solving, SIGTERM raises KeyboardInterrupt exactly where Ctrl-C would."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def budgets_for(package: Package, args: argparse.Namespace) -> list[float] | None:
    """The budgets asked for on the command line (None: the package's own)."""
    if args.budgets:
        return [float(b) for group in args.budgets for b in group]
    if args.budget_fracs:
        total = package.total_cost()
        budgets = [float(f) * total for f in args.budget_fracs]
        for f, b in zip(args.budget_fracs, budgets):
            if not math.isfinite(b):
                raise PackageError(f"--budget-fracs {f:g} times the total cost {total:g} is not a finite budget; "
                                   "give a smaller fraction", package_id=package.package_id)
        return budgets
    if not package.budgets:
        # A failure of this package, as a file that cannot be read is: the others are solved.
        raise PackageError("the package has no budgets; give --budget or --budget-fracs", package_id=package.package_id,
                           field="budgets")
    return None


def solve_package(package: Package, args: argparse.Namespace, log: SolveLog | None = None,
                  writer: ModelWriter | None = None) -> tuple[list[SolveResult], list[dict[str, Any]]]:
    """Solve (and certify) one package. ``writer`` is the run's ``--write-model`` directory:
    this package's model names are checked in it before anything is solved."""
    if log is None:
        log = SolveLog(verbose=args.verbose, notice=False)
    package = with_group_capacity(package, args.group_capacity)
    budgets = budgets_for(package, args)
    compiled = compile_package(package)
    if writer is not None and args.certify != "none":
        check_model_names(writer, compiled, package.budgets if budgets is None else budgets)
    results = solve(compiled, budgets=budgets, time_limit=args.time_limit,
                    node_limit=args.node_limit, log=log, finish=None if args.finish == "none" else args.finish,
                    handoff_after=args.handoff_after)
    if args.certify != "none":
        records = _certified_records(compiled, results, args, writer)
    else:
        records = [r.to_record() for r in results]
    if args.budget_fracs:
        for record, frac in zip(records, args.budget_fracs):
            record["budget_frac"] = float(frac)
    return results, records


def _certified_records(compiled: CompiledPackage, results: list[SolveResult], args: argparse.Namespace,
                       writer: ModelWriter | None) -> list[dict[str, Any]]:
    """The records of one package's results, each with its certificate. A package that fails
    here takes its models away (its records are never printed, so nothing names them)."""
    records: list[dict[str, Any]] = []
    stopped = False
    written = len(writer.written) if writer is not None else 0
    try:
        for result in results:
            if not stopped:
                try:
                    records += certify_results(compiled, [result], args.certify, time_limit=args.time_limit,
                                               write_model=writer)
                    continue
                except KeyboardInterrupt:
                    # Ctrl-C or SIGTERM while a MILP certifies: the solves are kept and printed,
                    # the certificates not made say so, and the command ends as interrupted.
                    stopped = True
                    if writer is not None:  # a model cut off between its files: no certificate names it
                        writer.remove_unfinished()
            records.append(_not_certified(result, args.certify))
    except BaseException:
        if writer is not None:
            writer.remove_since(written)
        raise
    return records


def check_model_names(writer: ModelWriter, compiled: CompiledPackage, budgets: list[float]) -> None:
    """Refuse (UsageError) a package whose models cannot all be written: a name there already,
    or one an earlier package of this run took (its id held twice: its file would be named
    in this package's certificate)."""
    stems = budget_stems(compiled, budgets)
    taken = [stem for stem in dict.fromkeys(stems) if stem in writer.entries]
    if taken:
        raise UsageError(f"--write-model {writer.directory}: package {compiled.package_id!r} needs the model "
                         f"{taken[0]}, which an earlier package of this run wrote (a package id given twice?); "
                         "nothing was written; give each package id once, or leave --write-model out")
    writer.check(stems)


def _not_certified(result: SolveResult, solver: str) -> dict[str, Any]:
    record = result.to_record()
    record["certificate"] = {"solver": solver, "status": "interrupted", "agrees": None,
                             "issues": ["stopped by Ctrl-C or SIGTERM before the MILP was solved"]}
    return record


def run(args: argparse.Namespace) -> int:
    if args.time_limit is not None and not args.time_limit >= 0:
        raise UsageError(f"--time-limit must be >= 0, got {args.time_limit}")
    if args.node_limit is not None and not 0 <= args.node_limit <= MAX_NODE_LIMIT:
        raise UsageError(f"--node-limit must be between 0 and 2^63 - 1 = {MAX_NODE_LIMIT}, got {args.node_limit}")
    if args.write_model is not None and args.certify == "none":
        raise UsageError("--write-model needs --certify (highs, gurobi or auto)")
    if not args.handoff_after >= 0:
        raise UsageError(f"--handoff-after must be >= 0, got {args.handoff_after}")
    check_certifier(args.certify)
    # One directory for the run: every package's names are checked before it is solved, and
    # a run that fails takes away the models it wrote (all or nothing, as certify's run).
    writer = ModelWriter(args.write_model) if args.write_model is not None else None
    if writer is not None:
        writer.check([])  # the directory itself, before anything is solved
    log = SolveLog(verbose=args.verbose, notice=args.time_limit is None)  # one notice per command
    try:
        with sigterm_as_interrupt():
            return _run(args, log, writer)
    except KeyboardInterrupt:
        if writer is not None:  # what finished is kept; a model cut off is not
            writer.remove_unfinished()
        raise
    except BaseException:
        if writer is not None:
            writer.remove_written()
        raise
    finally:
        log.close()


def _run(args: argparse.Namespace, log: SolveLog, writer: ModelWriter | None = None) -> int:
    failures = solved = disagree = uncertified = 0
    rows: list[list[Any]] = []
    interrupted = False
    for entry in read_entries(args.paths):
        try:
            if entry.error is not None:
                raise entry.error
            assert entry.package is not None
            results, records = solve_package(entry.package, args, log, writer)
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
        solved += 1
        for result, record in zip(results, records):
            cert: Any = record.get("certificate")
            if cert is not None:
                disagree += cert.get("agrees") is False
                uncertified += cert.get("agrees") is None
            if args.json:
                print_json_line(record)
            else:
                rows.append([result.package_id, result.budget, result.status, result.value, result.upper_bound,
                             f"{100 * result.gap:.3g}%", len(result.selected), result.cost, result.nodes,
                             result.seconds, result.proved_by or "-",
                             *(_certificate_cells(cert) if cert is not None else [])])
        if any(r.status == "interrupted" for r in results) or \
                any(r.get("certificate", {}).get("status") == "interrupted" for r in records):
            interrupted = True
            break
    if not args.json and rows:
        certified = ["milp", "certificate", "agrees"] if args.certify != "none" else []
        print_table(["package", "budget", "status", "opt", "upper_bound", "gap", "stored", "cost", "nodes", "seconds",
                     "proved_by", *certified], rows)
    if disagree or uncertified:
        print(f"memaudit solve: {disagree} certificate(s) disagree, {uncertified} could not be made "
              "(see --json for the issues)", file=sys.stderr)
    # One rule (cli.common): 3 when something failed, disagreed or stayed unverified; 2 when
    # nothing could be solved at all.
    return packages_exit_code("solve", args.paths, interrupted=interrupted, done=solved,
                              failed=failures + disagree + uncertified, note="the results above are anytime bounds")


def check_certifier(name: str) -> None:
    """A certifier asked for by name must be installed: refuse before solving anything."""
    import importlib.util

    if name == "gurobi" and importlib.util.find_spec("gurobipy") is None:
        raise UsageError("--certify gurobi needs gurobipy (pip install 'memaudit_fast[gurobi]'); "
                         "use --certify highs or auto")


def _certificate_cells(cert: dict[str, Any]) -> list[Any]:
    bracket = cert.get("bracket")
    if isinstance(bracket, dict):
        lo, hi = bracket.get("lower"), bracket.get("upper")
        milp: Any = f"[{'?' if lo is None else f'{lo:.6g}'}, {'?' if hi is None else f'{hi:.6g}'}]"
    else:
        milp = "-" if cert.get("value") is None else cert["value"]
    where = cert.get("solver") or "-"
    return [milp, f"{where} {cert.get('status')}", {True: "yes", False: "NO", None: "-"}[cert.get("agrees")]]
