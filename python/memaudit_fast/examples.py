"""Deprecated path: moved to ``memaudit_fast.model.examples`` (kept for one release)."""

from ._deprecated import moved

__getattr__ = moved(__name__, "memaudit_fast.model.examples")
