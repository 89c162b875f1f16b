"""Caps on what one package may hold, so untrusted input cannot exhaust memory.

Defaults are far above any real package (MEMAUDIT-Small at 100x holds a few thousand
candidates) and can be changed per call or, for the CLI and batch workers, through the
environment: ``MEMAUDIT_MAX_FILE_BYTES``, ``MEMAUDIT_MAX_CANDIDATES``, ``MEMAUDIT_MAX_UNITS``,
``MEMAUDIT_MAX_NONZEROS``, ``MEMAUDIT_MAX_BUDGETS``, ``MEMAUDIT_MAX_PWL_POINTS``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields

from ..errors import UsageError


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int = 1 << 30
    max_candidates: int = 2_000_000
    max_units: int = 2_000_000
    max_nonzeros: int = 20_000_000
    max_budgets: int = 10_000
    max_pwl_points: int = 10_000

    @classmethod
    def from_env(cls) -> Limits:
        values = {}
        for f in fields(cls):
            name = "MEMAUDIT_" + f.name.upper()
            raw = os.environ.get(name)
            if raw is None:
                continue
            try:
                value = int(raw)
            except ValueError:
                raise UsageError(f"{name}={raw!r} is not an integer") from None
            if value < 0:
                raise UsageError(f"{name}={raw!r} must be >= 0")
            values[f.name] = value
        return cls(**values)


def current_limits() -> Limits:
    return Limits.from_env()
