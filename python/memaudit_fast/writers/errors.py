"""Errors raised by the memory writers (Membox, ENGRAM) and their stores."""

from __future__ import annotations

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


def missing(package: str, purpose: str) -> DependencyMissing:
    """Build the error for an absent optional package, with the command that installs it."""
    return DependencyMissing(
        f"{purpose} needs the Python package {package!r}, which is not installed; "
        f"install it with: pip install 'memaudit_fast[writers]' (or pip install {package})"
    )
