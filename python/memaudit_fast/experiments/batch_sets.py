"""The SETs a batch is given, checked before anything is opened: a SET that cannot be read
as one (missing, a device or FIFO, a file that cannot be opened, a results file, standard
input that is a terminal) is a bad argument, refused with exit 2, not a failed member."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from ..errors import UsageError
from ..model.sets import STDIN, is_jsonl
from ..results.records import RESULT_FORMAT
from .batch_resume import starts_as_results

__all__ = ["check_sets"]


def check_sets(input_paths: list[Path]) -> None:
    """Refuse (``UsageError``) the first SET that cannot be read as a package set."""
    if any(str(p) == STDIN for p in input_paths) and _stdin_is_terminal():
        raise UsageError("SET -: standard input is a terminal, not a set; pipe a JSONL set in, e.g. "
                         "zcat small.jsonl.gz | memaudit batch - --out results.jsonl")
    for p in input_paths:
        if str(p) == STDIN:
            continue
        if not p.exists():
            raise UsageError(f"SET {p}: no such file or directory; give a package, a .jsonl set or a "
                             "directory that exists")
        mode = p.stat().st_mode
        if stat.S_ISDIR(mode):
            if not os.access(p, os.R_OK | os.X_OK):
                raise UsageError(f"SET {p}: this directory cannot be read (permission denied); give one you may read")
            continue
        if not stat.S_ISREG(mode):  # reading a FIFO or a device may block, or never end
            kind = "a FIFO" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
            pipe = " (to read a pipe, give - and pipe the set to standard input)" if stat.S_ISFIFO(mode) else ""
            raise UsageError(f"SET {p} is {kind}: give a package file, a .jsonl set or a directory{pipe}")
        try:
            os.close(os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)))
        except OSError as exc:
            raise UsageError(f"SET {p}: cannot be read ({exc.strerror or exc}); give a file you may read") from None
        if is_jsonl(p) and starts_as_results(p):
            # The mirror of a package set given as --out: scored as a set, each record failed,
            # and on a resume every record of --out was moved aside.
            raise UsageError(f"SET {p} is a results file ({RESULT_FORMAT} records), not a package set: give the "
                             f"package set it was scored on; to continue {p}, pass it as --out with --resume")


def _stdin_is_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False
