"""Deprecated path: moved to ``memaudit_fast.experiments.batch`` (kept for one release)."""

from ._deprecated import moved

__getattr__ = moved(__name__, "memaudit_fast.experiments.batch")
