"""Errors raised by the memory writers (Membox, ENGRAM) and their stores."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

from ..errors import MemauditError, UsageError


class WriterError(MemauditError):
    """A memory writer or one of its stores could not do what was asked."""


class DependencyMissing(WriterError, UsageError, ImportError):
    """An optional dependency (FAISS, an embedding model package) is not installed.

    The message names the pip package and the extra that brings it
    (``pip install 'memaudit_fast[writers]'``).
    """

    exit_code = 2


class StoreError(WriterError, ValueError):
    """A store directory is missing, incomplete, or was written by another format version."""

    exit_code = 2


class LLMError(WriterError, RuntimeError):
    """An LLM endpoint failed after all retries, or kept answering with invalid JSON."""

    exit_code = 2  # the endpoint the user named, not a bug here


def missing(package: str, purpose: str) -> DependencyMissing:
    """Build the error for an absent optional package, with the command that installs it."""
    return DependencyMissing(
        f"{purpose} needs the Python package {package!r}, which is not installed; "
        f"install it with: pip install 'memaudit_fast[writers]' (or pip install {package})"
    )


# SQLite's primary result codes (an extended code keeps the primary one in its low byte).
_SQLITE_PERM, _SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_FULL, _SQLITE_CANTOPEN = 3, 8, 10, 13, 14


def sqlite_os_error(exc: sqlite3.Error, path: str | Path) -> OSError | None:
    """The OS error behind a failed SQLite write to ``path``, or None when SQLite failed for
    another reason (a bug, not the environment).

    SQLite reports a full disk, a read-only file system or a refused permission with its own
    codes and messages; turned into an :class:`OSError` with the matching ``errno``, it gets
    the message every other writer gives (``model.outputs``), not an internal error.
    """
    code = getattr(exc, "sqlite_errorcode", None)  # Python >= 3.11
    text = str(exc).lower()
    if code is None:  # older Pythons give only the message
        code = (_SQLITE_FULL if "disk is full" in text else
                _SQLITE_READONLY if "readonly" in text or "read-only" in text else
                _SQLITE_CANTOPEN if "unable to open" in text else
                _SQLITE_IOERR if "disk i/o error" in text else None)
        if code is None:
            return None
    code &= 0xFF
    if code == _SQLITE_FULL:
        return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
    if code not in (_SQLITE_PERM, _SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_CANTOPEN):
        return None
    # These codes do not say which: ask the file system, as the write itself would have.
    where = Path(path) if Path(path).is_dir() else Path(path).parent
    try:
        if os.statvfs(where).f_flag & os.ST_RDONLY:
            return OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
    except OSError:
        pass
    if not os.access(where, os.W_OK | os.X_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        return OSError(errno.EACCES, os.strerror(errno.EACCES), str(path))
    return OSError(errno.EIO, str(exc), str(path))
