"""The error hierarchy. Every error a user can cause is a ``MemauditError``.

The CLI maps ``exit_code`` to the process exit status (see :mod:`memaudit_fast.cli.common`):
2 for bad input or usage, 1 for internal errors, 3 for a run that finished with failures,
130 for an interrupted run. Each class also subclasses the builtin a caller would catch: ``ValueError`` for bad input
(``PackageError``, ``UsageError``), ``RuntimeError`` for a solver or certifier that could not run.
"""

from __future__ import annotations


class MemauditError(Exception):
    """Base of every error memaudit_fast raises on purpose."""

    exit_code = 1


class PackageError(MemauditError, ValueError):
    """A package (or package set, export, result file) is malformed.

    The message names the package, the record (index or line), the field, what was found
    and what was expected.
    """

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        package_id: str | None = None,
        record: str | None = None,
        field: str | None = None,
        source: str | None = None,
    ) -> None:
        self.package_id = package_id
        self.record = record
        self.field = field
        self.source = source
        where = []
        if source:
            where.append(str(source))
        if package_id:
            where.append(f"package {package_id!r}")
        if record:
            where.append(record)
        if field:
            where.append(f"field {field!r}")
        self.detail = message
        #: Every defect found in the same input (this one first); ``validate`` prints them all.
        self.errors: list[PackageError] = [self]
        #: True when more defects may exist than ``errors`` holds (the cap was reached).
        self.truncated = False
        super().__init__(f"{': '.join(where)}: {message}" if where else message)


class UsageError(MemauditError, ValueError):
    """A command or function was called with options that do not fit together."""

    exit_code = 2


class OutputError(MemauditError, OSError):
    """An output could not be written (a full disk, a lost mount): the environment, not the
    input. The message says what was kept and how to go on."""


class SolverError(MemauditError, RuntimeError):
    """The exact solver could not run (not: stopped by a limit, which is a status)."""


class CertificationError(MemauditError, RuntimeError):
    """The MILP certifier could not build or solve its model."""


def raise_interrupt(signum: int, frame: object) -> None:
    """A signal handler that stops the work as Ctrl-C does (SIGTERM: exit 130, what finished
    kept), instead of ending the process where it stands (exit 143, no word)."""
    raise KeyboardInterrupt
