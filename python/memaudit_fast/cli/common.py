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
import gzip
import json
import math
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import PackageError
from ..model.jsonio import MAX_EXACT_INT, float_problem

if TYPE_CHECKING:
    from ..model.package import Package
    from ..model.sets import SetEntry

#: The name that means standard input (or output) wherever a command takes one file.
STDIO = "-"

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


def packages_exit_code(command: str, paths: Iterable[str | Path], *, interrupted: bool, done: int, failed: int,
                       note: str) -> int:
    """The end of a command over packages: 130 when Ctrl-C stopped it (``note`` says what the
    output above is), bad usage when the paths held no package at all, else
    :func:`finished_exit_code`."""
    if interrupted:
        print(f"memaudit {command}: interrupted; {note}", file=sys.stderr)
        return EXIT_INTERRUPTED
    if done == 0 and failed == 0:
        from ..errors import UsageError

        raise UsageError(f"no packages found in {', '.join(map(str, paths))} (a package .json, an artifact "
                         "directory, a .jsonl set, or a directory holding them)")
    return finished_exit_code(done, failed)


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
    """A plain aligned table (no colour, so it pipes cleanly), one precision per column."""
    digits = [_column_decimals([row[i] for row in rows if i < len(row)]) for i in range(len(headers))]
    cells = [[str(h) for h in headers]] + [[_fmt(c, digits[i]) for i, c in enumerate(row)] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    for k, row in enumerate(cells):
        print("  ".join(c.rjust(w) if k and _numeric(c) else c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if k == 0:
            print("  ".join("-" * w for w in widths))


def _column_decimals(values: list[Any]) -> int | None:
    """Decimals that show every float of a column to 6 significant digits (at most 6), or None
    when some float needs an exponent (then the whole column is in scientific notation)."""
    decimals = 0
    for v in values:
        if isinstance(v, float) and math.isfinite(v):
            text = f"{v:.6g}"
            if "e" in text or 0 < abs(v) < 1e-3:  # fixed decimals would drop its digits
                return None
            decimals = max(decimals, len(text.partition(".")[2]))
    return min(decimals, 6)


def _fmt(value: Any, decimals: int | None = None) -> str:
    if isinstance(value, float):
        if not math.isfinite(value):
            return f"{value:g}"
        if decimals is None:
            return f"{value:.3e}"
        return f"{value:.{decimals}f}"
    text = str(value)
    if text.isprintable():
        return text
    # An id with a line break, a tab or a terminal escape would break the table (or drive the
    # terminal): such characters are shown escaped, as repr shows them.
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def one_number(text: str) -> float:
    """Parse one number (argparse type), by the rules of :func:`number_list`."""
    if "," in text:
        raise argparse.ArgumentTypeError(f"{text!r}: give one number, e.g. 8")
    (value,) = number_list(text)
    return value


def number_list(text: str) -> list[float]:
    """Parse '2,4,8' (argparse type): finite numbers >= 0."""
    values = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            if text.strip():  # "4,,8" or "2,4,": a number left out, perhaps; not guessed at
                raise argparse.ArgumentTypeError(f"{text!r} has an empty entry; give numbers separated by "
                                                 "single commas, e.g. 2,4,8")
            continue
        if "_" in part:  # Python's 1_000; JSON and the package files have no such number
            raise argparse.ArgumentTypeError(f"{part!r} is not a number (write 1000, not 1_000)")
        try:
            value = float(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{part!r} is not a number (expected e.g. 2,4,8)") from None
        if not (value >= 0) or value == float("inf"):
            raise argparse.ArgumentTypeError(f"{part!r} must be a finite number >= 0")
        try:
            whole: int | None = int(part)
        except ValueError:
            whole = None
        problem = float_problem(part, value)
        if problem is not None and whole is None:  # (integers: said below)
            raise argparse.ArgumentTypeError(f"{part!r}: {problem}")
        if whole is not None and abs(whole) > MAX_EXACT_INT:
            # A float holds every integer up to 2^53 and then only some: 2^53 + 1 would be
            # recorded as 2^53 without a word (package budgets are refused the same way).
            raise argparse.ArgumentTypeError(
                f"{part!r}: integers are taken up to 2^53 = 9007199254740992, where every one is exact; "
                "give a smaller number")
        values.append(value + 0.0)  # -0 is 0: one spelling, one options digest
    if not values:
        raise argparse.ArgumentTypeError("expected at least one number, e.g. 2,4,8")
    return values


def group_capacity(text: str) -> int:
    """Parse ``--group-capacity K`` (argparse type): a whole number from 1 to 2^53.

    Checked here, where the option is named: past this point K is the package's
    ``objective.group_capacity``, and an error there would blame the package file.
    """
    try:
        if "_" in text:  # Python's 1_000; the package files have no such number
            raise ValueError(text)
        value = int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; give K from 1 to "
                                         f"2^53 = {MAX_EXACT_INT}, e.g. --group-capacity 2") from None
    if not 1 <= value <= MAX_EXACT_INT:
        raise argparse.ArgumentTypeError(f"{text!r} is out of range; give K from 1 to 2^53 = {MAX_EXACT_INT} "
                                         "(candidates a group may hold), e.g. --group-capacity 2")
    return value


def name_list(text: str) -> list[str]:
    """Parse 'gvt,greedy' (argparse type): names without the spaces around them. An empty entry
    ('gvt,,greedy', 'gvt,', ',') is refused, not dropped: a name left out is not guessed at
    (``--sample-id ,`` took every conversation)."""
    parts = [p.strip() for p in text.split(",")]
    if any(not p for p in parts) and text.strip():
        raise argparse.ArgumentTypeError(f"{text!r} has an empty entry; give names separated by single commas, "
                                         "e.g. gvt,greedy")
    return [p for p in parts if p]


class WriterNames(argparse.Action):
    """``--writers`` (with ``type=name_list``): the list given, refused when it names no writer
    (``--writers ''`` ran the default list, or none at all, without a word) or one writer twice
    (each writer is one column and one ``writers`` entry: a second would only repeat it)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        option = option_string or self.dest
        names = list(values or [])
        if not names:
            parser.error(f"{option} is empty; give writer names, e.g. gvt,greedy, or leave the option out")
        repeated = [name for name in dict.fromkeys(names) if names.count(name) > 1]
        if repeated:
            parser.error(f"{option} names {', '.join(repr(name) for name in repeated)} more than once; "
                         "name each writer once")
        setattr(namespace, self.dest, names)


def add_quiet(p: argparse.ArgumentParser) -> None:
    """``--quiet``: no progress display and no summary lines on stderr."""
    p.add_argument("--quiet", "-q", action="store_true", help="no progress display on stderr")


def read_stdin() -> str:
    """All of standard input as text (see :func:`memaudit_fast.model.lines.read_stdin_text`)."""
    from ..model.lines import read_stdin_text

    return read_stdin_text()


def stdin_entries() -> Iterator[SetEntry]:
    """The packages on stdin: one JSON package (pretty-printed or not), or a JSONL set, plain or
    gzip. A set is read as it comes, its packages yielded one by one (the first once a second
    line follows it), so that a command works while the producer still writes; lines within
    ``MEMAUDIT_MAX_FILE_BYTES`` each and the stream within ``MEMAUDIT_MAX_SET_BYTES``, as for a
    .jsonl file. One package is read whole, within ``MEMAUDIT_MAX_FILE_BYTES``."""
    from ..model.limits import current_limits
    from ..model.lines import iter_stream_lines, stdin_stream
    from ..model.sets import SetEntry, line_members, parse_member

    limits = current_limits()
    try:
        stream = stdin_stream()
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        yield SetEntry("<stdin>", None, PackageError(f"cannot read: {exc}", source="<stdin>"))
        return
    lines = iter_stream_lines(stream, "<stdin>", line_cap=limits.max_file_bytes, stream_cap=limits.max_set_bytes)
    held: list[tuple[int, bytes | PackageError]] = []  # the lines read before the kind of input is known
    first = next(_until_filled(lines, held), None)
    if first is None or isinstance(first[1], PackageError):
        one_per_line = first is not None  # a first line too long: a set's line, said as such
    else:
        try:
            one_per_line = isinstance(json.loads(first[1]), dict)
        except ValueError:  # (UnicodeDecodeError too)
            one_per_line = False
        # A line that is a whole object, and another after it: a set. One line alone: a package.
        one_per_line = one_per_line and next(_until_filled(lines, held), None) is not None
    if not one_per_line:
        yield _one_package(held, lines, limits.max_file_bytes)
        return
    for member in line_members(_chain(held, lines), "<stdin>"):  # as the lines of a .jsonl file
        try:
            yield SetEntry(member[0], parse_member(member), None)
        except PackageError as exc:
            yield SetEntry(member[0], None, exc)


def _until_filled(lines: Iterator[tuple[int, bytes | PackageError]],
                  held: list[tuple[int, bytes | PackageError]]) -> Iterator[tuple[int, bytes | PackageError]]:
    """Read ``lines`` into ``held`` up to the next that is not blank (None at the end), which
    it yields."""
    for number, line in lines:
        held.append((number, line))
        if isinstance(line, PackageError) or line.strip():
            yield number, line
            return


def _chain(held: list[tuple[int, bytes | PackageError]],
           lines: Iterator[tuple[int, bytes | PackageError]]) -> Iterator[tuple[int, bytes | PackageError]]:
    yield from held
    yield from lines


def _one_package(held: list[tuple[int, bytes | PackageError]], lines: Iterator[tuple[int, bytes | PackageError]],
                 cap: int) -> SetEntry:
    """The one package of stdin (every line, read whole within ``cap`` bytes)."""
    from ..model.lines import stdin_too_large
    from ..model.package import package_from_json
    from ..model.sets import SetEntry

    parts: list[bytes] = []
    total = 0
    too_large = stdin_too_large(cap)
    for _, line in _chain(held, lines):
        if isinstance(line, PackageError):  # unreadable, or a line too long (so is the whole)
            failed = line.detail.startswith("cannot read")
            return SetEntry("<stdin>", None, PackageError(line.detail, source="<stdin>") if failed else too_large)
        total += len(line)
        if total > cap:
            return SetEntry("<stdin>", None, too_large)
        parts.append(line)
    if not any(part.strip() for part in parts):
        return SetEntry("<stdin>", None, PackageError("no input on stdin; expected a package or a JSONL set",
                                                      source="<stdin>"))
    try:
        return SetEntry("<stdin>", package_from_json(b"".join(parts), source="<stdin>"), None)
    except PackageError as exc:
        return SetEntry("<stdin>", None, exc)


def read_entries(paths: Iterable[str | Path]) -> Iterator[SetEntry]:
    """Like :func:`memaudit_fast.model.sets.iter_set_entries`, with ``-`` for stdin."""
    from ..model.sets import iter_set_entries

    for path in paths:
        if str(path) == STDIO:
            yield from stdin_entries()
        else:
            yield from iter_set_entries([path])


def load_one(path: str | Path) -> Package:
    """One package from a file, an artifact directory, or ``-`` (stdin)."""
    if str(path) != STDIO:
        from ..model.io import load_package

        return load_package(path)
    (entry, *more) = list(stdin_entries())
    if more:
        from ..errors import UsageError
        from ..model.spec import RESULT_FORMAT

        if entry.error is not None and RESULT_FORMAT in entry.error.detail:  # (validate's words for one)
            raise UsageError(f"stdin holds {RESULT_FORMAT} records (a results file), not a package; read "
                             "results with memaudit export - results.csv or memaudit report - --out report/")
        raise UsageError(f"stdin holds a package set ({1 + len(more)} lines); this command takes one package")
    if entry.error is not None:
        raise entry.error
    assert entry.package is not None
    return entry.package


def read_json_input(path: str | Path) -> Any:
    """A JSON document from a file or ``-`` (stdin), strictly parsed."""
    from ..model.jsonio import loads_strict, read_text

    if str(path) == STDIO:
        return loads_strict(read_stdin(), source="<stdin>")
    return loads_strict(read_text(Path(path)), source=str(path))


def write_text_output(path: str | Path, text: str, *, overwrite: bool = False) -> None:
    """Write text to a file (atomically, refusing to replace one unless ``overwrite``) or ``-``."""
    if str(path) == STDIO:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    from ..model.jsonio import check_output_path, write_atomic

    check_output_path(Path(path), overwrite=overwrite)
    write_atomic(Path(path), lambda handle: handle.write(text))
