"""memaudit_fast: exact package-oracle scoring of budgeted long-term memory writing."""

from __future__ import annotations

from .errors import CertificationError, MemauditError, PackageError, SolverError, UsageError

__all__ = [
    "CertificationError",
    "MemauditError",
    "PackageError",
    "SolverError",
    "UsageError",
]
__version__ = "0.1.0"
