"""memaudit certify: check results computed earlier against an independent MILP."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import CertificationError, PackageError, UsageError
from ..model.compiled import compile_package
from ..model.jsonio import loads_strict
from ..results.records import check_record, read_results_text
from ..solve.certify import SOLVERS, certify
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
        "limit (or some result is an error record), 2 bad input.",
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
    """(label, record) per non-empty line; anything but a result object is a PackageError."""
    text, path = read_results_text(path)
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        label = f"line {number}"
        record = loads_strict(line, source=path, record=label)
        record = check_record(record, path, label)
        if not isinstance(record.get("package_id"), str):
            raise PackageError("expected the package id as a string", source=path, record=label, field="package_id")
        out.append((label, record))
    return out


def _not_certified(message: str, *, failed: bool) -> dict[str, Any]:
    return {"solver": None, "status": "not_certified", "agrees": False if failed else None, "issues": [message]}


def run(args: argparse.Namespace) -> int:
    if args.results == "-" and args.package == "-":
        raise UsageError("RESULTS and --package cannot both be read from stdin")
    results = read_results(args.results)
    wanted: dict[str, list[int]] = {}
    for k, (_, record) in enumerate(results):
        wanted.setdefault(record["package_id"], []).append(k)
    certificates: dict[int, dict[str, Any]] = {}
    matched: dict[str, list[int]] = {}  # results certified against the first package of their id
    for entry in read_entries([args.package]):
        if entry.package is None:
            continue
        if entry.package.package_id in matched:
            # Two packages of one id: which one a result is for cannot be told, and certifying
            # it against the first would fail a result that is right for the other.
            for k in matched.pop(entry.package.package_id):
                certificates[k] = _not_certified(
                    f"{args.package} holds package {entry.package.package_id!r} more than once (again at "
                    f"{entry.label}): which one the result is for cannot be told; give package ids once",
                    failed=False)
            continue
        if entry.package.package_id not in wanted:
            continue
        compiled = compile_package(entry.package)
        matched[entry.package.package_id] = wanted[entry.package.package_id]
        for k in wanted.pop(entry.package.package_id):
            record = results[k][1]
            try:
                cert = certify(compiled, record, args.solver, time_limit=args.time_limit,
                               write_model=args.write_model, group_capacity=args.group_capacity).to_dict()
            except CertificationError as exc:
                # An error record claims nothing, so it cannot disagree; anything else can.
                cert = _not_certified(str(exc), failed=record.get("status") != "error")
            certificates[k] = cert
    for package_id, ks in wanted.items():
        for k in ks:
            certificates[k] = _not_certified(f"no package {package_id!r} in {args.package}", failed=True)

    failed = unverified = 0
    rows = []
    for k, (label, record) in enumerate(results):
        cert = certificates[k]
        if cert["agrees"] is False:
            failed += 1
        elif cert["status"] != "optimal":
            unverified += 1
        if args.json:
            print_json_line({**record, "certificate": cert})
        else:
            rows.append(_row(label, record, cert))
    if not args.json:
        print_table(["result", "package", "budget", "claimed", "milp", "status", "agrees", "issues"], rows)
        print(f"{len(results)} results: {len(results) - failed - unverified} certified, "
              f"{failed} failed, {unverified} unverified", file=sys.stderr)
    if failed:
        return EXIT_FAILED
    return EXIT_UNVERIFIED if unverified else 0


def _row(label: str, record: dict[str, Any], cert: dict[str, Any]) -> list[Any]:
    bracket = cert.get("bracket")
    milp: Any
    if bracket:
        lo, hi = bracket.get("lower"), bracket.get("upper")
        milp = f"[{'?' if lo is None else f'{lo:.6g}'}, {'?' if hi is None else f'{hi:.6g}'}]"
    else:
        milp = cert.get("value")
    agrees = {True: "yes", False: "NO", None: "-"}[cert["agrees"]]
    return [label, record["package_id"], record.get("budget"), record.get("opt"), "" if milp is None else milp,
            cert["status"], agrees, "; ".join(cert.get("issues") or [])]
