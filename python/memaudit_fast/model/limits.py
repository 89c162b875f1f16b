"""Caps on what one package may hold, so untrusted input cannot exhaust memory.

Defaults are far above any real package (MEMAUDIT-Small at 100x holds a few thousand
candidates) and can be changed per call or, for the CLI and batch workers, through the
environment: ``MEMAUDIT_MAX_FILE_BYTES``, ``MEMAUDIT_MAX_CANDIDATES``, ``MEMAUDIT_MAX_UNITS``,
``MEMAUDIT_MAX_NONZEROS``, ``MEMAUDIT_MAX_BUDGETS``, ``MEMAUDIT_MAX_PWL_POINTS``,
``MEMAUDIT_MAX_DEPTH``, ``MEMAUDIT_MAX_SET_BYTES``.

``max_file_bytes`` caps every single thing read whole: a package file, one line of a JSONL
set, one file of an artifact directory, one results file (after decompression when the name
ends in ``.gz``). ``max_set_bytes`` caps the whole (decompressed) stream of one set file,
which is read line by line. ``max_depth`` caps how deeply arrays and objects nest; it stays
below what Python's recursion limit lets the decoders and writers handle, so any deeper
input is refused as bad input instead of crashing.
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
    max_depth: int = 500
    max_set_bytes: int = 1 << 36

    #: ``max_depth`` above this would let the standard decoders hit the recursion limit.
    DEPTH_CEILING = 800
    #: Every other cap at most this (2^50, about 10^15 bytes or records: far beyond any memory).
    #: The caps reach the core as 64-bit sizes and read calls as byte counts, so a cap of 2^64
    #: would not fit, and one near 2^63 would overflow once a line's byte is added to it.
    CEILING = 1 << 50

    @classmethod
    def from_env(cls) -> Limits:
        values = {}
        for f in fields(cls):
            name = "MEMAUDIT_" + f.name.upper()
            raw = os.environ.get(name)
            if raw is not None:
                values[f.name] = cls.parse_env(name, raw, cls.DEPTH_CEILING if f.name == "max_depth" else cls.CEILING)
        return cls(**values)

    @staticmethod
    def parse_env(name: str, raw: str, ceiling: int) -> int:
        """The value of the variable ``name`` set to ``raw``: ASCII digits only, from 0 to ``ceiling``."""
        text = raw.strip()
        allowed = f"expected an integer from 0 to {ceiling}"
        shown = raw if len(raw) <= 40 else f"{raw[:27]}...({len(raw)} chars)"
        if not (text.isascii() and text.isdigit()):
            what = "a negative number" if text[:1] == "-" and text[1:].isascii() and text[1:].isdigit() \
                else "not an integer in ASCII digits"
            raise UsageError(f"{name}={shown!r} is {what}; {allowed}")
        if len(text) > 20 or int(text) > ceiling:
            raise UsageError(f"{name}={shown!r} is too large; {allowed}")
        return int(text)


_NAMES = tuple("MEMAUDIT_" + f.name.upper() for f in fields(Limits))
_cache: tuple[tuple[object, ...], Limits] | None = None


def _env_key() -> tuple[object, ...]:
    # os.environ keeps its encoded copy in _data (CPython); looking names up there directly is
    # a C-level dict.get, which matters when every package of a batch asks.
    data = getattr(os.environ, "_data", None)
    encode = getattr(os.environ, "encodekey", None)
    if isinstance(data, dict) and encode is not None:
        return tuple(map(data.get, _encoded_names(encode)))
    return tuple(map(os.environ.get, _NAMES))


_encoded: tuple[object, ...] | None = None


def _encoded_names(encode: object) -> tuple[object, ...]:
    global _encoded
    if _encoded is None:
        _encoded = tuple(encode(name) for name in _NAMES)  # type: ignore[operator]
    return _encoded


def current_limits() -> Limits:
    """The limits in force (read from the environment; cached until it changes)."""
    global _cache
    key = _env_key()
    if _cache is None or _cache[0] != key:
        _cache = (key, Limits.from_env())
    return _cache[1]
