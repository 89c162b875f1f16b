"""Deprecated path: moved to ``memaudit_fast.results.report`` (kept for one release)."""

from ._deprecated import moved

__getattr__ = moved(__name__, "memaudit_fast.results.report")
