"""Small helpers shared by subcommands, and the one exit-code rule of every command.

Exit codes (the same in every command; ``main`` maps exceptions onto them):

* ``EXIT_OK`` 0: everything asked for was done;
* ``EXIT_INTERNAL`` 1: an internal error (a bug: please report it);
* ``EXIT_BAD_INPUT`` 2: bad input or usage, nothing solved or written (a missing or malformed
  file, options that do not fit, an output that exists without ``--force``, a full disk or a
  permission error, an unreachable LLM endpoint);
* ``EXIT_FAILURES`` 3: the command finished but some packages (or results) failed, each
  reported with its cause;
* ``EXIT_INTERRUPTED`` 130: Ctrl-C; what finished is kept.

A command over several inputs decides with :func:`finished_exit_code`: when nothing could be
done because every input was bad, that is bad input (2), not "some failed" (3).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2
EXIT_FAILURES = 3
EXIT_INTERRUPTED = 130


def finished_exit_code(done: int, failed: int) -> int:
    """0 when nothing failed, 3 when some inputs failed and others were done, 2 when all failed."""
    if not failed:
        return EXIT_OK
    return EXIT_FAILURES if done else EXIT_BAD_INPUT


def failure_text(label: str, error: BaseException) -> str:
    """``label: message`` without the label twice (a PackageError already names its source)."""
    message = str(error)
    return message if message.startswith(label) else f"{label}: {message}"


def add_subparser(subparsers: Any, name: str, summary: str, example: str) -> argparse.ArgumentParser:
    """A subparser whose --help ends with a worked example."""
    return subparsers.add_parser(
        name,
        help=summary,
        description=summary,
        epilog=f"example:\n  {example}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def print_json_line(record: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n")


def add_force(p: argparse.ArgumentParser, what: str = "existing outputs") -> None:
    p.add_argument("--force", action="store_true",
                   help=f"replace {what} (never an input, never through a symbolic link)")


def add_checksum_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--accept-checksum-mismatch", action="store_true",
                   help="read artifact directories whose files do not match the sha256 in their "
                   "manifest (the mismatch is kept in meta.artifact.checksum_mismatch)")


def apply_checksum_flag(args: argparse.Namespace) -> None:
    """Make ``--accept-checksum-mismatch`` reach every reader (worker processes included)."""
    if getattr(args, "accept_checksum_mismatch", False):
        import os

        os.environ["MEMAUDIT_ACCEPT_CHECKSUM_MISMATCH"] = "1"


def print_table(headers: list[str], rows: list[list[Any]]) -> None:
    """A plain aligned table (no colour, so it pipes cleanly)."""
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for k, row in enumerate(cells):
        print("  ".join(c.rjust(w) if k and _numeric(c) else c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if k == 0:
            print("  ".join("-" * w for w in widths))


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def number_list(text: str) -> list[float]:
    """Parse '2,4,8' (argparse type): finite numbers >= 0."""
    values = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            value = float(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{part!r} is not a number (expected e.g. 2,4,8)") from None
        if not (value >= 0) or value == float("inf"):
            raise argparse.ArgumentTypeError(f"{part!r} must be a finite number >= 0")
        values.append(value)
    if not values:
        raise argparse.ArgumentTypeError("expected at least one number, e.g. 2,4,8")
    return values


def name_list(text: str) -> list[str]:
    return [p.strip() for p in text.split(",") if p.strip()]
