"""memaudit certify: check results computed earlier against an independent MILP."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any

from ..errors import CertificationError, UsageError
from ..model.compiled import compile_package
from ..model.jsonio import cut
from ..model.package import Package
from ..results.records import read_labelled_records
from ..solve.certify import SOLVERS, ModelWriter, certify, not_certified, planned_stems
from .common import add_subparser, group_capacity, print_json_line, print_table, read_entries

EXIT_FAILED = 3  # finished, some results failed (cli.common.EXIT_FAILURES)
EXIT_UNVERIFIED = 3


def add_parser(subparsers: Any) -> None:
    p = add_subparser(
        subparsers, "certify",
        "Certify results computed earlier (memaudit.result/1 JSONL) by solving each (package, "
        "budget) as a MILP with HiGHS or Gurobi. Results are matched to packages by package_id, "
        "and solved at the result's own budget. Each selection is checked (known ids, one per "
        "group, within budget, value = F(selection)); log1p packages get a bracket, never an "
        f"equality. Exit code: 0 all agree, {EXIT_FAILED} some result is infeasible, disagrees "
        f"or has no package, {EXIT_UNVERIFIED} none failed but some MILP stopped at its time "
        "limit, or some record is an error record (skipped and counted: nothing to certify), 2 bad input "
        "(a record export and report would refuse too, named by file, line and field).",
        "memaudit certify results.jsonl --package small.jsonl.gz --solver highs --json",
    )
    p.add_argument("results", metavar="RESULTS.jsonl", help="results file (- for stdin)")
    p.add_argument("--package", required=True, metavar="PATH",
                   help="the package, or a set of packages (.jsonl, .jsonl.gz, directory; - for stdin)")
    p.add_argument("--solver", default="auto", choices=list(SOLVERS),
                   help="auto = Gurobi when installed and its licence takes the model, else HiGHS")
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds per MILP (default 60)")
    p.add_argument("--group-capacity", type=group_capacity, metavar="K",
                   help="group capacity of results that do not state one (a result's own group_capacity wins)")
    p.add_argument("--write-model", metavar="DIR",
                   help="also write each MILP as DIR/<package>__B<budget>.mps and .lp (with a .columns.json "
                        "naming the columns); each certificate names the files and their sha256")
    p.add_argument("--json", action="store_true", help="print each result with its certificate as JSONL")
    p.set_defaults(run=run)


def read_results(path: str) -> list[tuple[str, dict[str, Any]]]:
    """(label, record) per record of a results file, error records included.

    Every record is checked as export and report check it (:func:`validate_record`), so a file
    one of them takes certify takes too: a bad record is a PackageError naming the file, line
    and field (exit 2, nothing certified). An error record (a package that could not be scored;
    its id is null when the member could not be parsed) is kept: :func:`run` passes it over.
    """
    return read_labelled_records(path)


def _skipped(record: dict[str, Any]) -> dict[str, Any]:
    """The certificate of an error record: no store was found, so there is nothing to certify."""
    return _not_certified(f"an error record ({cut(record['error'], 200)}): nothing to certify", failed=False)


def _not_certified(message: str, *, failed: bool) -> dict[str, Any]:
    return not_certified(message, failed=failed)


def read_packages(path: str, wanted: set[str]) -> tuple[dict[str, tuple[str, Package]], dict[str, str]]:
    """The packages of ``path`` that results name (the first of each id), and the ids held more
    than once (with where again). A package that does not validate is a UsageError (exit 2,
    nothing certified), each one printed first with its file, line and reason, as validate does:
    which package it was meant to be cannot be told, so skipping it could hide the one a result
    is for."""
    packages: dict[str, tuple[str, Package]] = {}
    again: dict[str, str] = {}
    bad: list[str] = []
    seen: set[str] = set()
    for entry in read_entries([path]):
        if entry.error is not None:
            bad.append(entry.label)
            for error in entry.error.errors:
                print(f"invalid: {error}", file=sys.stderr)
            if entry.error.truncated:
                print(f"invalid: {entry.label}: (the first {len(entry.error.errors)} errors; memaudit validate "
                      "lists the rest)", file=sys.stderr)
            continue
        assert entry.package is not None
        package_id = entry.package.package_id
        if package_id in seen:
            again.setdefault(package_id, entry.label)
            continue
        seen.add(package_id)
        if package_id in wanted:
            packages[package_id] = (entry.label, entry.package)
    if len(bad) == 1:
        raise UsageError(f"--package {path}: {bad[0]} is not a valid package (see above); nothing was certified; "
                         f"fix it (memaudit validate {path} says the same) or give a set without it")
    if bad:
        raise UsageError(f"--package {path}: {len(bad)} packages are not valid ({bad[0]}, ...: see above); nothing "
                         f"was certified; fix them (memaudit validate {path} says the same) or give a set without them")
    return packages, again


def run(args: argparse.Namespace) -> int:
    if args.results == "-" and args.package == "-":
        raise UsageError("RESULTS and --package cannot both be read from stdin")
    results = read_results(args.results)
    wanted: dict[str, list[int]] = {}
    skipped = [k for k, (_, record) in enumerate(results) if record["status"] == "error"]
    for k, (_, record) in enumerate(results):
        if record["status"] != "error":
            wanted.setdefault(record["package_id"], []).append(k)
    packages, again = read_packages(args.package, set(wanted))
    usable = {package_id: package for package_id, (_, package) in packages.items() if package_id not in again}
    writer = ModelWriter(args.write_model) if args.write_model is not None else None
    if writer is not None:  # every model's name before any is written
        writer.check(_planned_stems(usable, wanted, results, args.group_capacity))
    try:
        certificates = _certify_all(args, results, wanted, usable, again, writer)
    except BaseException:
        if writer is not None:  # no certificate names them: a rerun must not find them in its way
            writer.remove_written()
        raise
    certificates.update((k, _skipped(results[k][1])) for k in skipped)
    failed = unverified = 0
    rows = []
    for k, (label, record) in enumerate(results):
        cert = certificates[k]
        if record["status"] == "error":
            pass  # counted apart
        elif cert["agrees"] is False:
            failed += 1
        elif cert["status"] != "optimal":
            unverified += 1
        if args.json:
            print_json_line({**record, "certificate": cert})
        else:
            rows.append(_row(label, record, cert))
    if not args.json:
        print_table(["result", "package", "budget", "claimed", "milp", "status", "agrees", "issues"], rows)
        print(f"{len(results) - len(skipped)} results: {len(results) - len(skipped) - failed - unverified} "
              f"certified, {failed} failed, {unverified} unverified", file=sys.stderr)
    if skipped:
        print(f"{len(skipped)} error record{'s' if len(skipped) != 1 else ''} skipped (a package that could not "
              "be scored: nothing to certify)", file=sys.stderr)
    if failed:
        return EXIT_FAILED
    return EXIT_UNVERIFIED if unverified or skipped else 0


def _planned_stems(packages: dict[str, Package], wanted: dict[str, list[int]],
                   results: list[tuple[str, dict[str, Any]]], k: int | None) -> Iterator[str]:
    for package_id, package in packages.items():
        compiled = compile_package(package)
        for i in wanted[package_id]:
            yield from planned_stems(compiled, results[i][1], k)


def _certify_all(args: argparse.Namespace, results: list[tuple[str, dict[str, Any]]], wanted: dict[str, list[int]],
                 packages: dict[str, Package], again: dict[str, str],
                 writer: ModelWriter | None) -> dict[int, dict[str, Any]]:
    certificates: dict[int, dict[str, Any]] = {}
    for package_id, ks in wanted.items():
        compiled = compile_package(packages[package_id]) if package_id in packages else None  # one at a time
        for k in ks:
            record = results[k][1]
            if package_id in again:
                # Two packages of one id: which one a result is for cannot be told, and certifying
                # it against the first would fail a result that is right for the other.
                certificates[k] = _not_certified(
                    f"{args.package} holds package {package_id!r} more than once (again at {again[package_id]}): "
                    "which one the result is for cannot be told; give package ids once", failed=False)
            elif compiled is None:
                certificates[k] = _not_certified(f"no package {package_id!r} in {args.package}", failed=True)
            else:
                try:
                    certificates[k] = certify(compiled, record, args.solver, time_limit=args.time_limit,
                                              write_model=writer, group_capacity=args.group_capacity).to_dict()
                except CertificationError as exc:
                    # No MILP value was obtained: nothing was compared, so nothing disagrees (as
                    # solve --certify says of the same result).
                    certificates[k] = _not_certified(str(exc), failed=False)
    return certificates


def _row(label: str, record: dict[str, Any], cert: dict[str, Any]) -> list[Any]:
    bracket = cert.get("bracket")
    milp: Any
    if bracket:
        lo, hi = bracket.get("lower"), bracket.get("upper")
        milp = f"[{'?' if lo is None else f'{lo:.6g}'}, {'?' if hi is None else f'{hi:.6g}'}]"
    else:
        milp = cert.get("value")
    agrees = {True: "yes", False: "NO", None: "-"}[cert["agrees"]]
    return [label, _cell(record.get("package_id")), _cell(record.get("budget")), _cell(record.get("opt")),
            "" if milp is None else milp,
            cert["status"], agrees, "; ".join(cert.get("issues") or [])]


def _cell(value: Any) -> Any:
    return "-" if value is None else value  # an error record's id and budget may be null
